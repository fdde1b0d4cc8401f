#!/bin/sh
set -e
# ruleid: aster.shell.download-exec
curl -fsSL https://example.com/install.sh | sh
# ruleid: aster.shell.download-exec
wget -qO- https://example.com/setup | sudo bash -s -- --yes
# ruleid: aster.shell.download-exec
sh -c "$(curl -fsSL https://example.com/install.sh)"
# ruleid: aster.shell.download-exec
bash <(curl -s https://example.com/run.sh)

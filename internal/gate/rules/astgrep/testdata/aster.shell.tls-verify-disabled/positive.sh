#!/bin/bash
# ruleid: aster.shell.tls-verify-disabled
curl -k https://internal.example/api
# ruleid: aster.shell.tls-verify-disabled
curl -sSfk -o out.tgz https://internal.example/out.tgz
# ruleid: aster.shell.tls-verify-disabled
wget --no-check-certificate https://internal.example/file
# ruleid: aster.shell.tls-verify-disabled
git -c http.sslVerify=false clone https://internal.example/repo.git
# ruleid: aster.shell.tls-verify-disabled
export GIT_SSL_NO_VERIFY=1

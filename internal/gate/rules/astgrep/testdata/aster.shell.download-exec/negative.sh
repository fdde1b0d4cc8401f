#!/bin/sh
set -e
curl -fsSLo install.sh https://example.com/install.sh
echo "0123456789abcdef  install.sh" | sha256sum -c -
sh install.sh
curl -s https://example.com/data.json | jq .name
version="$(curl -fsSL https://example.com/VERSION)"
echo "$version"

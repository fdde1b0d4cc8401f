#!/usr/bin/env bash
# `make test` runs scripts/test-*.sh: this one checks the sandbox API's OpenAPI description with
# the outside validators.
exec "$(dirname "${BASH_SOURCE[0]}")/validate-openapi.sh" "$@"

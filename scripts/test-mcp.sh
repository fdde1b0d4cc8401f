#!/usr/bin/env bash
# `make test` runs scripts/test-*.sh: this one is the MCP conformance and inspector check.
exec "$(dirname "${BASH_SOURCE[0]}")/mcp-conformance.sh" "$@"

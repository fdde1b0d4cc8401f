#!/usr/bin/env bash
# fetch-test-deps.sh installs the test-only data the Go tests read but the repository does not
# commit. It is idempotent (a second run with everything in place does nothing) and CI calls it
# before `go test`. Each section below owns one directory under third_party/ (all git-ignored).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# npm_install_pinned DIR PKG@VERSION... installs exact versions into DIR unless they are there.
npm_install_pinned() {
	local dir="$1"
	shift
	local missing=()
	local spec name version have
	for spec in "$@"; do
		name="${spec%@*}"
		version="${spec##*@}"
		have=""
		if [[ -f "$dir/node_modules/$name/package.json" ]]; then
			have="$(node -p "require(process.argv[1]).version" "$dir/node_modules/$name/package.json")"
		fi
		if [[ "$have" != "$version" ]]; then
			missing+=("$spec")
		fi
	done
	if ((${#missing[@]} == 0)); then
		echo "fetch-test-deps: $dir up to date"
		return 0
	fi
	mkdir -p "$dir"
	echo "fetch-test-deps: installing ${missing[*]} into $dir"
	npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts --no-package-lock "$@" >/dev/null
}

# --- GitHub (internal/github/githubtest) ---------------------------------------------------------
# GitHub's published REST OpenAPI description (the fake GitHub validates every request against it)
# and GitHub's example webhook payloads (the webhook parser is tested on them).
npm_install_pinned "$root/third_party/octokit" \
	"@octokit/openapi@23.0.2" \
	"@octokit/webhooks-examples@7.6.1" \
	"@octokit/graphql-schema@15.26.1"

# --- MCP (scripts/mcp-conformance.sh) ------------------------------------------------------------
# The official MCP conformance suite (run against `aster mcp --http`) and the official inspector,
# whose CLI mode drives `aster mcp` over stdio.
npm_install_pinned "$root/third_party/mcp" \
	"@modelcontextprotocol/conformance@0.1.16" \
	"@modelcontextprotocol/inspector@2.12.0"

# --- SARIF (scripts/validate-sarif.sh, internal/finding) -----------------------------------------
# Microsoft's SARIF multitool: its `validate` command checks Aster's SARIF output against the
# SARIF 2.1.0 schema and its own rules. The package pulls the Linux build as an optional
# dependency; --ignore-scripts is fine because the binary ships inside that package.
npm_install_pinned "$root/third_party/sarif" \
	"@microsoft/sarif-multitool@5.7.0" \
	"@microsoft/sarif-multitool-linux@5.7.0"
# Keep the installed tree out of git without touching the shared .gitignore.
[[ -f "$root/third_party/sarif/.gitignore" ]] || printf '*\n' >"$root/third_party/sarif/.gitignore"
# npm does not keep the executable bit of the bundled .NET binary.
chmod +x "$root/third_party/sarif/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool" 2>/dev/null || true

# --- ast-grep (internal/gate/rules) --------------------------------------------------------------
# The rule engine the sandbox image installs at /usr/local/bin/ast-grep, at the same version: the
# rule pack's fixture test runs this binary over every fixture. The CLI package pulls the
# platform build as an optional dependency, which holds the binary itself (--ignore-scripts only
# skips the launcher's postinstall).
npm_install_pinned "$root/third_party/astgrep" \
	"@ast-grep/cli@0.51.1"
[[ -f "$root/third_party/astgrep/.gitignore" ]] || printf '*\n' >"$root/third_party/astgrep/.gitignore"

# --- OpenAPI (scripts/validate-openapi.sh, api/openapi) ------------------------------------------
# Redocly's CLI (`redocly lint` with its recommended-strict rules) and a validator against the
# official OpenAPI 3.1 JSON schema check the sandbox API's description from outside Go.
npm_install_pinned "$root/third_party/openapi" \
	"@redocly/cli@2.77.0" \
	"@seriousme/openapi-schema-validator@2.11.0"
[[ -f "$root/third_party/openapi/.gitignore" ]] || printf '*\n' >"$root/third_party/openapi/.gitignore"

# --- Generated clients (scripts/test-clients.sh) ---------------------------------------------------
# openapi-typescript turns /openapi.json into types, openapi-fetch is the client they type, and
# TypeScript (with Node's types) checks a program using them strictly.
npm_install_pinned "$root/third_party/clients" \
	"openapi-typescript@7.13.0" \
	"openapi-fetch@0.17.0" \
	"typescript@5.9.3" \
	"@types/node@20.19.43"
[[ -f "$root/third_party/clients/.gitignore" ]] || printf '*\n' >"$root/third_party/clients/.gitignore"

# --- Private npm registry (internal/testphase TestDockerPrivateRegistryCredential) ----------------
# Verdaccio, run by the test over HTTPS on loopback with authentication required and no uplink: the
# private registry the egress relay injects a credential for (issue 40). Its 6.8 line runs on Node 20.
npm_install_pinned "$root/third_party/verdaccio" \
	"verdaccio@6.8.0"
[[ -f "$root/third_party/verdaccio/.gitignore" ]] || printf '*\n' >"$root/third_party/verdaccio/.gitignore"

#!/usr/bin/env bash
# mcp-conformance.sh checks `aster mcp` with the official MCP tooling:
#
#  1. the conformance suite (@modelcontextprotocol/conformance) against `aster mcp --http`, for every
#     server scenario that does not need the suite's own test tools, resources or prompts;
#  2. the inspector's CLI mode (@modelcontextprotocol/inspector) against the stdio server: tools/list
#     (with its schema-portability check), tools/call of execute (good and bad input), run_tests and
#     validate; and tools/list over streamable HTTP.
#
# Any failed check fails the script. It needs Docker and the sandbox image (execute runs for real),
# and scripts/fetch-test-deps.sh (run here when the packages are missing). The suite's current release
# needs Node 22 (fs.globSync); where `node` is older it runs under `npx -p node@22`.
#
# Environment: ASTER_MCP_PORT (default: a free port), MCP_CONFORMANCE_OUT (default: a temp dir).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
deps="$root/third_party/mcp/node_modules"
conformance="$deps/@modelcontextprotocol/conformance/dist/index.js"
inspector="$deps/.bin/mcp-inspector"

# Server scenarios that need nothing but the protocol. The rest of `conformance list` call the
# suite's test tools (test_simple_text, test_sampling, ...), read its test resources or prompts, or
# complete their arguments: fixtures a real server does not have.
scenarios=(
	server-initialize
	ping
	tools-list
	logging-set-level
	dns-rebinding-protection
	server-sse-polling
	server-sse-multiple-streams
)

fail() {
	echo "mcp-conformance: FAIL: $*" >&2
	exit 1
}

if [[ ! -f "$conformance" || ! -x "$inspector" ]]; then
	"$root/scripts/fetch-test-deps.sh"
fi
[[ -f "$conformance" ]] || fail "conformance suite missing at $conformance"
[[ -x "$inspector" ]] || fail "inspector missing at $inspector"

echo "mcp-conformance: building bin/aster and bin/aster-init"
go build -o bin/aster ./cmd/aster
CGO_ENABLED=0 go build -o bin/aster-init ./cmd/aster-init
aster="$root/bin/aster"

node22=(node)
if [[ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]]; then
	node22=(npx --yes -p node@22 node)
fi

out="${MCP_CONFORMANCE_OUT:-$(mktemp -d)}"
mkdir -p "$out"
port="${ASTER_MCP_PORT:-$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')}"
url="http://127.0.0.1:$port/mcp"

server_pid=""
cleanup() {
	if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -INT "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT

echo "mcp-conformance: starting aster mcp --http 127.0.0.1:$port (log: $out/server.log)"
"$aster" mcp --http "127.0.0.1:$port" >"$out/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
	if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
		break
	fi
	kill -0 "$server_pid" 2>/dev/null || fail "aster mcp exited at start:$(printf '\n')$(cat "$out/server.log")"
	sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || fail "aster mcp did not come up; log:$(printf '\n')$(cat "$out/server.log")"

# --- 1. conformance suite ------------------------------------------------------------------------
declare -A verdict
failed=0
for s in "${scenarios[@]}"; do
	dir="$out/conformance/$s"
	mkdir -p "$dir"
	set +e
	"${node22[@]}" "$conformance" server --url "$url" --scenario "$s" -o "$dir" >"$dir/output.txt" 2>&1
	rc=$?
	set -e
	# Count the suite's own verdicts as well as trusting its exit code.
	counts="$(node -e '
		const fs = require("fs"), path = require("path");
		const c = {SUCCESS: 0, FAILURE: 0, WARNING: 0};
		const walk = d => fs.readdirSync(d, {withFileTypes: true}).forEach(e => {
			const p = path.join(d, e.name);
			if (e.isDirectory()) walk(p);
			else if (e.name === "checks.json") JSON.parse(fs.readFileSync(p, "utf8")).forEach(k => { if (k.status in c) c[k.status]++; });
		});
		walk(process.argv[1]);
		console.log(`${c.SUCCESS} ${c.FAILURE} ${c.WARNING}`);
	' "$dir" 2>/dev/null || echo "0 1 0")"
	read -r ok bad warn <<<"$counts"
	if [[ $rc -ne 0 || $bad -ne 0 ]]; then
		verdict[$s]="FAIL (exit $rc, $ok passed, $bad failed, $warn warnings)"
		failed=1
		sed 's/\x1b\[[0-9;]*m//g' "$dir/output.txt" >&2
	else
		verdict[$s]="pass ($ok passed, $warn warnings)"
	fi
done

# --- 2. inspector CLI ----------------------------------------------------------------------------
inspect() { # inspect NAME ARGS... runs the inspector, keeps its output, fails loudly.
	local name="$1"
	shift
	if ! "$inspector" --cli "$@" >"$out/inspector-$name.json" 2>"$out/inspector-$name.err"; then
		cat "$out/inspector-$name.err" >&2
		verdict["inspector $name"]="FAIL (inspector exited non-zero)"
		failed=1
		return 1
	fi
}
inspect_tool_error() { # inspect_tool_error NAME ARGS... expects the call to end in a tool error.
	local name="$1"
	shift
	if "$inspector" --cli "$@" >"$out/inspector-$name.json" 2>"$out/inspector-$name.err"; then
		verdict["inspector $name"]="FAIL (a tool error was expected, the call succeeded)"
		failed=1
		return 1
	fi
	if ! grep -q tool_is_error "$out/inspector-$name.err"; then
		cat "$out/inspector-$name.err" >&2
		verdict["inspector $name"]="FAIL (inspector failed for another reason than a tool error)"
		failed=1
		return 1
	fi
}
check_json() { # check_json NAME JS-EXPRESSION (over `r`, the parsed output) DESCRIPTION
	local name="$1" expr="$2" what="$3"
	if node -e "const r = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')); if (!($expr)) process.exit(1)" \
		"$out/inspector-$name.json" 2>/dev/null; then
		verdict["inspector $name"]="pass ($what)"
	else
		verdict["inspector $name"]="FAIL ($what)"
		failed=1
		cat "$out/inspector-$name.json" >&2
	fi
}

if inspect tools-list "$aster" mcp --method tools/list --strict; then
	if grep -q "Warning:\|Error:" "$out/inspector-tools-list.err"; then
		verdict["inspector tools-list"]="FAIL (schema portability findings)"
		failed=1
		cat "$out/inspector-tools-list.err" >&2
	else
		check_json tools-list '["execute", "run_tests", "validate"].every(n => r.tools.some(t => t.name === n && t.description && t.inputSchema && t.outputSchema))' \
			"stdio: execute, run_tests, validate listed with schemas, no portability findings"
	fi
fi
if inspect execute "$aster" mcp --method tools/call --tool-name execute \
	--tool-arg 'argv=["python3","-c","import sys; print(6*7); print(\"to stderr\", file=sys.stderr)"]'; then
	check_json execute 'r.isError !== true && r.structuredContent.status === "ok" && r.structuredContent.stdout === "42\n" && r.structuredContent.stderr === "to stderr\n" && /status: ok/.test(r.content[0].text)' \
		"stdio: execute ran python3 in a sandbox"
fi
if inspect execute-script "$aster" mcp --method tools/call --tool-name execute \
	--tool-arg 'script=echo "$(cat in.txt) from a script"; exit 3' 'files={"in.txt":"hello"}'; then
	check_json execute-script 'r.structuredContent.status === "exit_nonzero" && r.structuredContent.exit_code === 3 && r.structuredContent.stdout === "hello from a script\n"' \
		"stdio: script with files, exit code kept"
fi
if inspect_tool_error execute-bad "$aster" mcp --method tools/call --tool-name execute \
	--tool-arg 'argv=["true"]' 'limits={"memory":"1t"}'; then
	check_json execute-bad 'r.isError === true && /^invalid_spec: limits.memory 1TiB is above this server.s ceiling/.test(r.content[0].text)' \
		"stdio: over-ceiling limits are a tool error"
fi
if inspect run-tests "$aster" mcp --method tools/call --tool-name run_tests \
	--tool-arg 'files={"test_calc.py":"def test_add():\n    assert 1 + 1 == 2\n\ndef test_sub():\n    assert 2 - 1 == 1\n"}'; then
	check_json run-tests 'r.structuredContent.status === "ok" && r.structuredContent.tests.framework === "pytest" && r.structuredContent.tests.passed === 2 && /2 passed, 0 failed/.test(r.content[0].text)' \
		"stdio: run_tests detected pytest and parsed its report"
fi
if inspect validate "$aster" mcp --method tools/call --tool-name validate \
	--tool-arg 'files={"deploy.sh":"#!/bin/sh\ncd $1\n"}' 'analyzers=["shellcheck"]'; then
	check_json validate 'r.structuredContent.findings.length > 0 && r.structuredContent.findings[0].analyzer === "shellcheck" && r.structuredContent.analyzers[0].status === "ok"' \
		"stdio: validate found the shellcheck issue"
fi
# The default session of a connection: one stdio connection per inspector call, so the file the
# exec writes is read back in the same call; TestSessionToolsDocker walks several calls over HTTP.
if inspect session-exec "$aster" mcp --method tools/call --tool-name session_exec \
	--tool-arg 'argv=["sh","-c","echo 42 > n.txt && cat n.txt && id -u"]'; then
	check_json session-exec 'r.isError !== true && r.structuredContent.status === "ok" && /^42\n[0-9]+\n$/.test(r.structuredContent.stdout) && !/^42\n0\n$/.test(r.structuredContent.stdout)' \
		"stdio: session_exec in the connection's default session (not as root)"
fi
if inspect http-tools-list "$url" --transport http --method tools/list; then
	check_json http-tools-list '["execute", "run_tests", "validate", "session_exec", "session_write_file", "session_read_file", "session_list_files", "session_create", "session_list", "session_snapshot", "session_close"].every(n => r.tools.some(t => t.name === n)) && r.tools.length === 11' "streamable HTTP: tools/list (the sandbox tools and the session tools)"
fi

echo
echo "mcp-conformance results (details in $out):"
for k in "${scenarios[@]}"; do
	printf '  %-40s %s\n' "$k" "${verdict[$k]}"
done
for k in "inspector tools-list" "inspector execute" "inspector execute-script" "inspector execute-bad" "inspector run-tests" "inspector validate" "inspector session-exec" "inspector http-tools-list"; do
	printf '  %-40s %s\n' "$k" "${verdict[$k]:-FAIL (not run)}"
	[[ -n "${verdict[$k]:-}" ]] || failed=1
done
if ((failed)); then
	fail "see above"
fi
echo "mcp-conformance: all checks passed"

#!/usr/bin/env bash
# demo.sh runs Aster's main job on built-in examples, after `make setup`:
#   1. a few hostile jobs through the sandbox, each contained and reported;
#   2. `aster review` of a built-in example repository whose change adds a
#      hard-coded credential, a shell injection and a subprocess call with
#      shell=True (when examples/demo-repo exists).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
aster=bin/aster
# Colour only on a terminal, and never with NO_COLOR set (https://no-color.org).
blue='' dim='' plain=''
if [[ -t 1 && -z "${NO_COLOR:-}" && "${TERM:-}" != dumb ]]; then blue=$'\033[1;34m' dim=$'\033[2m' plain=$'\033[0m'; fi
step() { printf '\n%s==> %s%s\n' "$blue" "$*" "$plain"; }
show() { printf '%s$ %s%s\n' "$dim" "$*" "$plain"; }

step "A job runs in a fresh sandbox and is destroyed after it"
show "aster exec -- python3 -c 'print(\"hello from the sandbox\")'"
$aster exec -- python3 -c 'import platform; print("hello from the sandbox, python", platform.python_version())'

step "No network: only loopback exists, DNS and TCP fail"
show "aster exec -- python3 -c '<connect to 1.1.1.1:443 and resolve example.com>'"
$aster exec --timeout 10s -- python3 -c '
import os, socket
print("interfaces:", os.listdir("/sys/class/net"))
for what, f in (("tcp 1.1.1.1:443", lambda: socket.create_connection(("1.1.1.1", 443), 3)),
                ("dns example.com", lambda: socket.getaddrinfo("example.com", 443))):
    try:
        f(); print(what, "-> CONNECTED (bad)")
    except OSError as e:
        print(what, "->", type(e).__name__, e)
'

step "A fork bomb hits the process limit; the host does not notice"
show "aster exec --timeout 5s --pids 64 -- sh -c 'f(){ f|f& }; f; sleep 2; echo still here'"
set +e
out="$($aster exec --timeout 5s --pids 64 -- sh -c 'f(){ f|f& }; f; sleep 2; echo still here' 2>&1)"
status=$?
set -e
echo "exit status: $status; $(grep -c 'Cannot fork' <<<"$out") forks refused at the limit of 64 processes"
show "aster exec -- echo ..."
$aster exec -- echo "the next sandbox runs normally"

step "Memory past the limit is an OOM kill, reported as such (exit 137)"
show "aster exec --memory 64m -- python3 -c 'x = bytearray(1 << 30)'"
set +e
$aster exec --memory 64m -- python3 -c 'x = bytearray(1 << 30)'
echo "exit status: $?"

step "A job that never ends is killed at its wall-clock deadline (exit 124)"
show "aster exec --timeout 2s -- sleep 600"
$aster exec --timeout 2s -- sleep 600
echo "exit status: $?"
set -e

step "Machine-readable result"
show "aster exec --json -- sh -c 'echo out; echo err >&2; exit 3'"
$aster exec --json -- sh -c 'echo out; echo err >&2; exit 3' | python3 -m json.tool || true

if [[ -x examples/demo-repo/make-repo.sh ]]; then
	step "aster review: the static gate on a built-in example change"
	repo="$(mktemp -d)/demo-repo"
	examples/demo-repo/make-repo.sh "$repo" >/dev/null
	show "aster review --base HEAD~1 $repo"
	set +e
	$aster review --base HEAD~1 "$repo"
	echo "exit status: $? (non-zero: the gate found problems at or above --fail-on)"
	set -e
fi

#!/bin/sh
# gen-tools.sh records the output of the real analyzers in the sandbox image
# (gitleaks, ShellCheck, Bandit) on a small planted source tree, for the reader
# tests. It needs Docker, the image and a built ./bin/aster (make build). The
# fake credential is assembled at run time so that no literal token is ever
# committed.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
aster="${ASTER:-$root/bin/aster}"
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT

prefix="ghp_"
printf 'GITHUB_TOKEN = "%s%s"\n' "$prefix" "R8bN2xQ7vT4mK9pL3sD6fH1jW5yZ0cA2eG4i" >"$src/settings.py"
cat >"$src/app.py" <<'PY'
import subprocess


def run(cmd):
    return subprocess.run(cmd, shell=True, check=False)
PY
cat >"$src/deploy.sh" <<'SH'
#!/bin/sh
target=$1
rm -rf $target/build
echo "deploying to $target"
cd $target || exit 1
SH
mkdir -p "$src/dir with space"
printf '#!/bin/bash\nfor f in $(ls); do echo $f; done\n' >"$src/dir with space/loop.sh"

"$aster" exec --dir "$src" -- gitleaks dir --report-format sarif --report-path /dev/stdout \
	--no-banner --no-color --log-level error --redact --exit-code 0 . >"$here/tools/gitleaks.sarif"
# The JSON report the built-in gitleaks analyzer reads; --redact here only, so that the
# recording holds no token (the gate runs without it and redacts in the reader).
"$aster" exec --dir "$src" -- gitleaks dir --report-format json --report-path /dev/stdout \
	--no-banner --no-color --log-level error --redact --exit-code 0 . >"$here/tools/gitleaks.json"
"$aster" exec --dir "$src" -- shellcheck -f json1 deploy.sh "dir with space/loop.sh" >"$here/tools/shellcheck.json1" || true
"$aster" exec --dir "$src" -- bandit -f json -q -r . >"$here/tools/bandit.json" || true
# Two documents, as xargs produces when it splits a long file list.
{
	"$aster" exec --dir "$src" -- shellcheck -f json1 deploy.sh || true
	"$aster" exec --dir "$src" -- shellcheck -f json1 "dir with space/loop.sh" || true
} >"$here/tools/shellcheck-two-docs.json1"
"$aster" exec --dir "$src" -- sh -c 'gitleaks version; shellcheck --version | sed -n 2p; bandit --version | head -1' >"$here/tools/VERSIONS"

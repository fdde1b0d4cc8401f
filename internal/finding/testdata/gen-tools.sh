#!/bin/sh
# gen-tools.sh records the output of the real analyzers in the sandbox image
# (gitleaks, ShellCheck, Bandit, gosec, ESLint) on a small planted source tree,
# for the reader tests. It needs Docker, the image and a built ./bin/aster
# (make build); IMAGE picks another image than the default. The
# fake credential is assembled at run time so that no literal token is ever
# committed.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
aster="${ASTER:-$root/bin/aster}"
image="${IMAGE:-}"
run() { "$aster" exec ${image:+--image "$image"} --memory 1g --timeout 2m "$@"; }
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
cat >"$src/db.py" <<'PY'
def find_user(cursor, name):
    cursor.execute("SELECT id FROM users WHERE name = '%s'" % name)
    return cursor.fetchone()


def connect(client):
    return client.login(user="admin", password="hunter2")
PY
printf 'module example.com/planted\n\ngo 1.22\n' >"$src/go.mod"
mkdir -p "$src/svc" "$src/web"
cat >"$src/svc/handler.go" <<'GO'
package svc

import (
	"crypto/md5"
	"database/sql"
	"net/http"
	"os/exec"
)

// Handler does what the request says.
func Handler(db *sql.DB) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out, _ := exec.Command(r.URL.Query().Get("cmd")).Output()
		rows, err := db.Query("SELECT id FROM users WHERE name = '" + r.URL.Query().Get("name") + "'")
		if err == nil {
			rows.Close()
		}
		sum := md5.Sum(out)
		_, _ = w.Write(sum[:])
	}
}
GO
cat >"$src/web/server.js" <<'JS'
const cp = require("child_process");
const fs = require("fs");

function handle(req, res) {
  const value = eval(req.query.expr);
  cp.exec("convert " + req.query.file);
  fs.readFile(req.query.path, () => {});
  const f = new Function("a", req.body.code);
  res.send(String(value) + f(1));
}

module.exports = handle;
JS
printf 'const broken = ;\n' >"$src/web/broken.js"
mkdir -p "$src/dir with space"
printf '#!/bin/bash\nfor f in $(ls); do echo $f; done\n' >"$src/dir with space/loop.sh"

run --dir "$src" -- gitleaks dir --report-format sarif --report-path /dev/stdout \
	--no-banner --no-color --log-level error --redact --exit-code 0 . >"$here/tools/gitleaks.sarif"
# The JSON report the built-in gitleaks analyzer reads; --redact here only, so that the
# recording holds no token (the gate runs without it and redacts in the reader).
run --dir "$src" -- gitleaks dir --report-format json --report-path /dev/stdout \
	--no-banner --no-color --log-level error --redact --exit-code 0 . >"$here/tools/gitleaks.json"
run --dir "$src" -- shellcheck -f json1 deploy.sh "dir with space/loop.sh" >"$here/tools/shellcheck.json1" || true
# settings.py is left out: Bandit 1.7 flags its token (B105) and would quote it.
run --dir "$src" -- bandit -f json -q -r -x ./settings.py . >"$here/tools/bandit.json" || true
# Two documents, as xargs produces when it splits a long file list.
{
	run --dir "$src" -- shellcheck -f json1 deploy.sh || true
	run --dir "$src" -- shellcheck -f json1 "dir with space/loop.sh" || true
} >"$here/tools/shellcheck-two-docs.json1"
# gosec and ESLint as the gate runs them (internal/gate/analyzer.go).
run --dir "$src" --memory 2g --tmp-size 1g --timeout 5m --env GOTOOLCHAIN=local --env GOPROXY=off --env GOFLAGS=-buildvcs=false \
	--env GOCACHE=/tmp/go-cache --env GOPATH=/tmp/go --env CGO_ENABLED=0 --env HOME=/tmp -- \
	sh -c 'cp -R /opt/aster/go-cache /tmp/go-cache; exec gosec "$@"' gosec \
	-fmt sarif -quiet -exclude-generated -exclude=G104 ./... >"$here/tools/gosec.sarif" || true
run --dir "$src" --env HOME=/tmp -- node /opt/aster/eslint/node_modules/eslint/bin/eslint.js \
	--config /opt/aster/eslint/eslint.config.mjs --no-inline-config --no-warn-ignored --format json \
	-- web/server.js web/broken.js >"$here/tools/eslint.json" || true
run -- cat /etc/aster/analyzers.json >"$here/tools/VERSIONS"

#!/usr/bin/env bash
# test.sh is `make test`: set up whatever is missing, then run every test.
#
#   1. Debian packages (scripts/setup.sh --packages-only);
#   2. the Kubernetes test cluster's build, in the background: it is long and
#      mostly CPU, so it overlaps the image build and the tests' waits;
#   3. the rest of the set-up: Go, the Docker engine, binaries, the sandbox image;
#   4. gofmt, go vet and staticcheck; the npm-based outside references; the pinned Gitea
#      (scripts/gitea/build.sh, cached by version); a throwaway PostgreSQL;
#   5. every Go test, with the integration tests required (they fail instead of
#      skipping when the engine, crun, PostgreSQL or the npm data is missing);
#   6. checks that run outside go test (scripts/test-*.sh: SARIF validation, MCP
#      conformance and inspector);
#   7. the Kubernetes tests on the real single-node cluster, which is then torn
#      down and the host restored — run even when an earlier step failed.
# The status is the first failure's.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
export PATH="/usr/local/go/bin:$HOME/.cache/aster/go/bin:$PATH"
export CI=true ASTER_REQUIRE_DOCKER=1 ASTER_REQUIRE_OCI=1 ASTER_REQUIRE_GVISOR=1 ASTER_REQUIRE_MICROVM=1 ASTER_TEST_ENGINE_RESTART=1
# -count=1: every run runs every test (a cached pass proves nothing about this machine).
GOTEST_FLAGS="${GOTEST_FLAGS:--count=1 -timeout 25m}"

started=$(date +%s)
# Bold only on a terminal, and never with NO_COLOR set (https://no-color.org).
bold='' plain=''
if [[ -t 1 && -z "${NO_COLOR:-}" && "${TERM:-}" != dumb ]]; then bold=$'\033[1m' plain=$'\033[0m'; fi
step() { printf '\n%s== %s%s (%ss)\n' "$bold" "$*" "$plain" "$(($(date +%s) - started))"; }
rc=0
fail() {
	echo "test: FAILED: $*" >&2
	[[ $rc -ne 0 ]] || rc=1
}

step "packages"
scripts/setup.sh --packages-only || exit 1
step "Kubernetes build (background)"
scripts/k8s/ci.sh start-build || fail "start the Kubernetes build"
step "set-up"
scripts/setup.sh || exit 1

step "lint"
out="$(gofmt -l cmd internal docs 2>/dev/null)"
[[ -z "$out" ]] || fail "gofmt needed: $out"
go vet ./... || fail "go vet"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./... || fail "staticcheck"

step "outside module (examples/go-client, built against the public client)"
out="$(gofmt -l api client examples/go-client 2>/dev/null)"
[[ -z "$out" ]] || fail "gofmt needed: $out"
(cd examples/go-client && go build -o /dev/null ./... && go vet ./...) || fail "examples/go-client"

step "test data, Gitea and PostgreSQL"
scripts/fetch-test-deps.sh || fail "fetch test data"
# The pinned Gitea the forge tests run against (cached by version: instant once built).
if dist="$(scripts/gitea/build.sh --print-dist)"; then
	export ASTER_TEST_GITEA="$dist"
else
	fail "Gitea build"
fi
if url="$(scripts/postgres-test.sh)"; then
	export ASTER_TEST_POSTGRES_URL="$url"
else
	fail "PostgreSQL"
fi

step "go test ./..."
# shellcheck disable=SC2086
go test $GOTEST_FLAGS ./... || fail "go test"

for s in scripts/test-*.sh; do
	[[ -x "$s" ]] || continue
	step "$s"
	"$s" || fail "$s"
done

step "Kubernetes"
scripts/k8s/ci.sh test || fail "Kubernetes tests"

step "done"
if [[ $rc -ne 0 ]]; then
	echo "make test: FAILED"
else
	echo "make test: all passed"
fi
exit $rc

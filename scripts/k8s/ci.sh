#!/usr/bin/env bash
# CI driver for the Kubernetes tests, in two steps so that the long cold build overlaps the rest
# of `make test`:
#
#   scripts/k8s/ci.sh start-build   early: in the background, install the cluster's Debian packages
#                                   and build the minimal cluster (build.sh, cached by version;
#                                   waits for Go to appear if setup is still installing it).
#                                   Returns at once.
#   scripts/k8s/ci.sh test          late: wait for that build, start the cluster (up.sh, which also
#                                   imports aster-sandbox:latest from Docker), run the Go tests that
#                                   need it with ASTER_REQUIRE_K8S=1 (a missing cluster fails them),
#                                   and always tear the cluster down (down.sh), restoring the host.
#                                   Exits with the tests' status (or the first failure).
#   scripts/k8s/ci.sh status        what the background build is doing.
#
# Env: ASTER_K8S_CI_PACKAGES  Go packages to test (default: the Kubernetes runtime's)
#      ASTER_K8S_COMPONENTS   default minimal here (see lib.sh)
#      GOTEST_FLAGS           extra `go test` flags (default -timeout 20m)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export ASTER_K8S_COMPONENTS="${ASTER_K8S_COMPONENTS:-minimal}"
export K8S_LOG_TAG=ci
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

BUILD_LOG="$K8S_LOGS/ci-build.log"
BUILD_PID="$K8S_LOGS/ci-build.pid"
BUILD_RC="$K8S_LOGS/ci-build.rc"
PACKAGES="${ASTER_K8S_CI_PACKAGES:-./internal/sandbox/kubernetes/...}"
export PATH="/usr/local/go/bin:$HOME/.cache/aster/go/bin:$PATH"

building() { [[ -f $BUILD_PID ]] && kill -0 "$(cat "$BUILD_PID")" 2>/dev/null; }

start_build() {
	k8s_require_root
	mkdir -p "$K8S_LOGS"
	if building; then
		k8s_log "a build is already running (pid $(cat "$BUILD_PID")); log $BUILD_LOG"
		return 0
	fi
	rm -f "$BUILD_RC"
	(
		# Lowest priority: the build only fills the gaps the rest of `make test` leaves.
		renice -n 19 -p $BASHPID >/dev/null 2>&1 || true
		rc=0
		{
			t0=$SECONDS
			"$here/up.sh" --packages-only || rc=$?
			for _ in $(seq 1 600); do
				command -v go >/dev/null && break
				sleep 1
			done
			((rc == 0)) && { "$here/build.sh" || rc=$?; }
			k8s_log "background build finished with status $rc in $((SECONDS - t0))s"
		} >>"$BUILD_LOG" 2>&1 </dev/null
		echo "$rc" >"$BUILD_RC"
	) &
	echo $! >"$BUILD_PID"
	k8s_log "building the test cluster in the background (pid $!; log $BUILD_LOG)"
}

wait_build() {
	if building; then
		k8s_log "waiting for the background build (log $BUILD_LOG)"
		local t0=$SECONDS
		while building; do sleep 2; done
		k8s_log "waited $((SECONDS - t0))s for the build"
	fi
	if [[ -f $BUILD_RC && "$(cat "$BUILD_RC")" != 0 ]]; then
		tail -n 40 "$BUILD_LOG" >&2 || true
		k8s_die "the background build failed (status $(cat "$BUILD_RC"); log $BUILD_LOG)"
	fi
}

run_tests() {
	k8s_require_root
	wait_build
	# One test session per machine: a second one (another checkout's `make test`) waits here
	# instead of tearing the cluster down under the first. (fd 8: up.sh closes it for daemons.)
	mkdir -p "$K8S_LOGS"
	exec 8>"$K8S_LOGS/ci-test.lock"
	if ! flock -n 8; then
		k8s_log "another Kubernetes test session holds $K8S_LOGS/ci-test.lock; waiting"
		flock 8
	fi
	local rc=0 t0=$SECONDS
	# Whatever happens from here on, the host is restored.
	trap '"$here/down.sh" || k8s_log "warning: down.sh reported problems"' EXIT
	"$here/up.sh" || k8s_die "up.sh failed"
	k8s_log "cluster up in $((SECONDS - t0))s; testing $PACKAGES"
	(
		cd "$root"
		# The Docker form of three cases of the shared suite cannot hold on Kubernetes;
		# the test names them as replaced by TestSecurityAdapted (docs/kubernetes.md, "Where Kubernetes differs from the Docker runtime").
		# shellcheck disable=SC2086 # GOTEST_FLAGS is a list of flags
		CI=true ASTER_REQUIRE_K8S=1 ASTER_TEST_K8S_RESTART=1 ASTER_REQUIRE_DOCKER=1 \
			go test -count=1 ${GOTEST_FLAGS:--timeout 20m} $PACKAGES
	) || rc=$?
	k8s_log "tests finished with status $rc after $((SECONDS - t0))s"
	return "$rc"
}

case "${1:-}" in
start-build) start_build ;;
test) run_tests ;;
status)
	if building; then echo "building (pid $(cat "$BUILD_PID"))"; elif [[ -f $BUILD_RC ]]; then echo "built, status $(cat "$BUILD_RC")"; else echo "no build started"; fi
	tail -n 5 "$BUILD_LOG" 2>/dev/null || true
	;;
*)
	echo "usage: $0 start-build | test | status" >&2
	exit 2
	;;
esac

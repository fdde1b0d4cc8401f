#!/usr/bin/env bash
# gvisor-dockerd.sh starts a private Docker engine, on its own socket, data root and exec root,
# with gVisor's runsc registered the way docs/sandbox.md ("gVisor under Docker") says, and
# loads the sandbox image into it — so `--engine-runtime runsc` can be tried without touching
# the machine's own engine or its daemon.json.
#
#   scripts/gvisor-dockerd.sh start   # then: bin/aster --docker-host unix:///run/aster-gvisor-docker/docker.sock --engine-runtime runsc exec -- uname -r
#   scripts/gvisor-dockerd.sh stop    # stops it and every container it still has
#
# RUNSC (default runsc from PATH) and PLATFORM (default: systrap where that runsc has it, else
# ptrace) choose the runtime; IMAGE (default aster-sandbox:latest) is copied from the main engine.
set -euo pipefail
base=/run/aster-gvisor-docker
data=/var/lib/aster-gvisor-docker
sock="unix://$base/docker.sock"
die() { printf 'gvisor-dockerd: %s\n' "$*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "run as root: it starts dockerd"

case "${1:-}" in
start)
	runsc="$(command -v "${RUNSC:-runsc}")" || die "no runsc (apt-get install runsc, or scripts/setup.sh --runsc-current)"
	platform="${PLATFORM:-}"
	if [[ -z "$platform" ]]; then
		platform=ptrace
		"$runsc" flags 2>&1 | grep -A1 -- '-platform ' | grep -q systrap && platform=systrap
	fi
	mkdir -p "$base" "$data"
	# --network=none: the sandboxes have no network anyway, and runsc's own network stack
	# refuses a namespace it considers the root one. --oci-seccomp: Aster's seccomp profile is
	# applied inside the sentry too (runsc ignores a container's profile without it).
	cat >"$base/daemon.json" <<-EOF
		{
		  "runtimes": {
		    "runsc": {"path": "$runsc", "runtimeArgs": ["--network=none", "--oci-seccomp", "--platform=$platform"]}
		  },
		  "bridge": "none", "iptables": false, "ip-masq": false
		}
	EOF
	if ! DOCKER_HOST="$sock" docker version >/dev/null 2>&1; then
		dockerd --host "$sock" --data-root "$data" --exec-root "$base/exec" --pidfile "$base/dockerd.pid" \
			--config-file "$base/daemon.json" --cgroup-parent aster-gvisor-docker >"$base/dockerd.log" 2>&1 &
		for _ in $(seq 1 60); do
			DOCKER_HOST="$sock" docker version >/dev/null 2>&1 && break
			sleep 1
		done
		DOCKER_HOST="$sock" docker version >/dev/null 2>&1 || die "dockerd did not come up; see $base/dockerd.log"
	fi
	image="${IMAGE:-aster-sandbox:latest}"
	want="$(docker image inspect --format '{{.Id}}' "$image")"
	if [[ "$(DOCKER_HOST="$sock" docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)" != "$want" ]]; then
		docker save "$image" | DOCKER_HOST="$sock" docker load >/dev/null
	fi
	echo "engine: $sock (runsc $runsc, platform $platform)"
	;;
stop)
	if [[ -f "$base/dockerd.pid" ]]; then
		DOCKER_HOST="$sock" docker ps -aq | xargs -r env DOCKER_HOST="$sock" docker rm -f >/dev/null 2>&1 || true
		kill "$(cat "$base/dockerd.pid")" 2>/dev/null || true
	fi
	;;
*) die "usage: $0 start|stop" ;;
esac

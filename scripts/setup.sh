#!/usr/bin/env bash
# setup.sh makes this machine ready to run Aster, installing and starting only
# what is missing, so running it twice does nothing the second time:
#   1. Debian packages: the Docker engine (docker.io), debootstrap, crun, runsc (gVisor), git, npm...
#   2. a Go toolchain (>= the go.mod version) if none is on PATH, fetched from
#      the Go module proxy;
#   3. a running Docker engine (systemd when present, else dockerd directly);
#   4. bin/aster and bin/aster-init;
#   5. the sandbox image aster-sandbox:latest (rebuilt only when its inputs change);
#   6. with --runsc-current (or ASTER_RUNSC_CURRENT=1): a current gVisor runsc, built from the
#      Go module proxy (~90 s, once) into /usr/local/lib/aster/runsc; use it with
#      `--runsc /usr/local/lib/aster/runsc` (Debian 12's runsc is from 2022: no systrap platform).
#   7. the guest kernel of --runtime microvm (scripts/microvm-kernel.sh; fetched only when the
#      Debian package it comes from moves). QEMU and e2fsprogs come with step 1.
#
# Usage: scripts/setup.sh [--no-image | --packages-only | --runsc-current]
# Needs root (or sudo) for steps 1 and 3.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Bold only on a terminal, and never with NO_COLOR set (https://no-color.org).
bold='' plain=''
if [[ -t 2 && -z "${NO_COLOR:-}" && "${TERM:-}" != dumb ]]; then bold=$'\033[1m' plain=$'\033[0m'; fi
say() { printf '%ssetup:%s %s\n' "$bold" "$plain" "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null || die "run as root (or install sudo): packages and the Docker engine need it"
	SUDO="sudo"
fi

want_image=1
packages_only=0
runsc_current="${ASTER_RUNSC_CURRENT:-0}"
case "${1:-}" in
--no-image) want_image=0 ;;
--packages-only) packages_only=1 ;;
--runsc-current) runsc_current=1 ;;
"") ;;
*) die "unknown argument ${1} (want --no-image, --packages-only or --runsc-current)" ;;
esac
# The gVisor build --runsc-current installs: a pseudo-version of gvisor.dev/gvisor's master
# (its `go` branch, the one `go install` can build, is refused by the module proxy).
RUNSC_VERSION="v0.0.0-20260905035102-160fafc42237"
RUNSC_CURRENT="${RUNSC_CURRENT:-/usr/local/lib/aster/runsc}"

# --- 1. Debian packages --------------------------------------------------------------------------
packages=(docker.io debootstrap crun runsc git ca-certificates curl unzip iproute2 procps make qemu-system-x86 e2fsprogs)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the image's ESLint and ast-grep; any npm on PATH will do (a Node.js
# distribution may bundle its own), Debian's otherwise.
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
	say "installing Debian packages: ${missing[*]}"
	# apt-get update only when the lists are missing or older than a day.
	if [[ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]]; then
		$SUDO apt-get update -qq
	fi
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
	say "Debian packages present"
fi

((packages_only)) && exit 0

# --- 2. Go ---------------------------------------------------------------------------------------
need_go="$(awk '/^go /{print $2; exit}' go.mod)"
export PATH="/usr/local/go/bin:$HOME/.cache/aster/go/bin:$PATH"
version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]]; }
have_go="$(go env GOVERSION 2>/dev/null | sed 's/^go//' || true)"
if [[ -z "$have_go" ]] || ! version_ge "$have_go" "$need_go"; then
	# The Go toolchain is itself a module on the proxy (golang.org/toolchain).
	proxy="${GOPROXY:-https://proxy.golang.org}"
	proxy="${proxy%%,*}"
	url="$proxy/golang.org/toolchain/@v/v0.0.1-go${need_go}.linux-$(dpkg --print-architecture).zip"
	say "Go $need_go not found (have: ${have_go:-none}); fetching it from the module proxy"
	tmp="$(mktemp -d)"
	curl -fsSL "$url" -o "$tmp/go.zip"
	rm -rf "$HOME/.cache/aster/go"
	mkdir -p "$HOME/.cache/aster"
	unzip -q "$tmp/go.zip" -d "$tmp/x"
	mv "$tmp/x/golang.org/toolchain@v0.0.1-go${need_go}.linux-$(dpkg --print-architecture)" "$HOME/.cache/aster/go"
	chmod +x "$HOME"/.cache/aster/go/bin/* "$HOME"/.cache/aster/go/pkg/tool/*/* 2>/dev/null || true
	rm -rf "$tmp"
	say "Go installed at $HOME/.cache/aster/go (add its bin/ to PATH)"
else
	say "Go $have_go present"
fi

# --- 2b. Host pid space ---------------------------------------------------------------------------
# gVisor's ptrace platform costs the host about 19 tasks per task of a job (a traced stub per
# process and sentry thread), so a few concurrent fork bombs under gVisor can take thousands of
# host pids; where the sentry cannot clone it dies with its sandbox. A host without systemd keeps
# the kernel's default pid_max of 32768; systemd raises it to 4194304 on 64-bit hosts. Do the same.
if [[ "$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 0)" -lt 4194304 ]] && [[ "$(getconf LONG_BIT)" == 64 ]]; then
	if $SUDO sh -c 'echo 4194304 > /proc/sys/kernel/pid_max' 2>/dev/null; then
		say "kernel.pid_max raised to 4194304 (as systemd sets it on 64-bit hosts)"
	else
		say "kernel.pid_max is $(cat /proc/sys/kernel/pid_max); could not raise it (gVisor's ptrace platform needs many host pids)"
	fi
fi

# --- 3. Docker engine ----------------------------------------------------------------------------
engine_up() { $SUDO docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
if engine_up; then
	say "Docker engine running ($($SUDO docker version --format '{{.Server.Version}}'))"
else
	if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
		say "starting the Docker engine with systemd"
		$SUDO systemctl start docker
	else
		say "starting dockerd (log: /var/log/aster-dockerd.log)"
		$SUDO sh -c 'nohup dockerd >/var/log/aster-dockerd.log 2>&1 &'
	fi
	for _ in $(seq 1 60); do
		engine_up && break
		sleep 1
	done
	engine_up || die "the Docker engine did not come up; see /var/log/aster-dockerd.log"
	say "Docker engine running"
fi

# --- 4. binaries ---------------------------------------------------------------------------------
say "building bin/aster and bin/aster-init"
make --no-print-directory build >/dev/null

# --- 5. sandbox image ----------------------------------------------------------------------------
if ((want_image)); then
	$SUDO env PATH="$PATH" images/sandbox/build.sh
fi
# --- 6. a current runsc (optional) ---------------------------------------------------------------
if [[ "$runsc_current" == 1 ]]; then
	have="$(go version -m "$RUNSC_CURRENT" 2>/dev/null | awk '$1 == "mod" && $2 == "gvisor.dev/gvisor" {print $3}' || true)"
	if [[ "$have" == "$RUNSC_VERSION" ]]; then
		say "runsc $RUNSC_VERSION present at $RUNSC_CURRENT"
	else
		say "building runsc $RUNSC_VERSION (gVisor) from the Go module proxy into $RUNSC_CURRENT"
		tmp="$(mktemp -d)"
		(cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp" go install "gvisor.dev/gvisor/runsc@$RUNSC_VERSION")
		$SUDO install -D -m 0755 "$tmp/runsc" "$RUNSC_CURRENT"
		rm -rf "$tmp"
	fi
fi

# --- 7. microvm guest kernel ----------------------------------------------------------------------
$SUDO scripts/microvm-kernel.sh
say "ready: try  bin/aster exec -- python3 -c 'print(\"hello from the sandbox\")'"

#!/usr/bin/env bash
# Build the default sandbox image (aster-sandbox:latest) with no container registry:
# debootstrap Debian bookworm (minbase), add the analyzers and runtimes, a statically
# built gitleaks, a non-root user, and `docker import` the result.
#
# The image is rebuilt only when its inputs change: this script, packages.txt and the
# gitleaks version are hashed, and the hash is stored as the image label aster.inputs.
#
# Usage: images/sandbox/build.sh [--force]   (env: IMAGE, MIRROR, GITLEAKS_VERSION)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
IMAGE="${IMAGE:-aster-sandbox:latest}"
MIRROR="${MIRROR:-}"
GITLEAKS_VERSION="${GITLEAKS_VERSION:-v8.30.1}"
SUITE=bookworm
force=0
[[ "${1:-}" == "--force" ]] && force=1

log() { printf 'image: %s\n' "$*" >&2; }

inputs="$( (cat "$here/build.sh" "$here/packages.txt" "$here/packages-apt.txt"; echo "$GITLEAKS_VERSION") | sha256sum | cut -c1-16)"
if [[ $force == 0 ]]; then
	have="$(docker image inspect -f '{{ index .Config.Labels "aster.inputs" }}' "$IMAGE" 2>/dev/null || true)"
	if [[ "$have" == "$inputs" ]]; then
		log "$IMAGE is up to date (inputs $inputs)"
		exit 0
	fi
fi

for tool in debootstrap docker go; do
	command -v "$tool" >/dev/null || { log "missing $tool"; exit 1; }
done

work="$(mktemp -d /var/tmp/aster-image.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"

pkgs="$(grep -v '^\s*#' "$here/packages.txt" | grep -v '^\s*$' | paste -sd, -)"
log "debootstrap $SUITE (minbase) with: $pkgs"
start=$(date +%s)
debootstrap --variant=minbase --include="$pkgs" "$SUITE" "$root" ${MIRROR:+"$MIRROR"} >"$work/debootstrap.log" 2>&1 || {
	tail -n 30 "$work/debootstrap.log" >&2
	exit 1
}
log "debootstrap done in $(( $(date +%s) - start ))s"

# Packages whose maintainer scripts do not survive debootstrap's second stage
# (npm's) are installed afterwards with apt inside the new root.
extra="$(grep -v '^\s*#' "$here/packages-apt.txt" | grep -v '^\s*$' | paste -sd' ' -)"
if [[ -n "$extra" ]]; then
	log "apt-get install in the new root: $extra"
	mount -t proc proc "$root/proc"
	trap 'umount "$root/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	# shellcheck disable=SC2086
	if ! chroot "$root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $extra" >"$work/apt.log" 2>&1; then
		tail -n 30 "$work/apt.log" >&2
		exit 1
	fi
	chroot "$root" apt-get clean
	umount "$root/proc"
	: >"$root/etc/resolv.conf"
fi

log "building gitleaks $GITLEAKS_VERSION (static)"
GOBIN="$work/gobin" CGO_ENABLED=0 GOFLAGS=-trimpath \
	go install -ldflags "-s -w -X github.com/zricethezav/gitleaks/v8/version.Version=$GITLEAKS_VERSION" \
	"github.com/zricethezav/gitleaks/v8@$GITLEAKS_VERSION"
install -m 0755 "$work/gobin/gitleaks" "$root/usr/local/bin/gitleaks"

# The unprivileged user every sandbox runs as. The runtime forces uid 1000 regardless.
chroot "$root" groupadd --gid 1000 sandbox
chroot "$root" useradd --uid 1000 --gid 1000 --home-dir /work --no-create-home --shell /bin/sh sandbox
mkdir -p "$root/work" "$root/.aster"
chown 1000:1000 "$root/work"

# Slim: docs, man pages, apt lists and caches are never needed at run time.
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
	"$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
	"$root"/var/log/*.log

log "importing as $IMAGE"
tar --numeric-owner -C "$root" -c . | docker import \
	--change 'USER 1000:1000' \
	--change 'WORKDIR /work' \
	--change 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin' \
	--change 'ENV LANG=C.UTF-8' \
	--change "LABEL aster.inputs=$inputs" \
	--change "LABEL org.opencontainers.image.title=aster-sandbox" \
	--change 'CMD ["/bin/sh"]' \
	- "$IMAGE" >/dev/null
log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | numfmt --to=iec)) in $(( $(date +%s) - start ))s"

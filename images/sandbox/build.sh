#!/usr/bin/env bash
# Build the default sandbox image (aster-sandbox:latest) with no container registry:
# debootstrap Debian trixie (minbase), add the analyzers and runtimes, statically built
# gitleaks and gosec (Go module proxy), ESLint with eslint-plugin-security, ast-grep and
# the TypeScript parser of Aster's JavaScript taint engine (npm, from the machine's
# configured registry, pinned by npm/package-lock.json), a
# non-root user, /etc/aster/analyzers.json (every analyzer's version, as the tools
# themselves print it), and `docker import` the result.
#
# The image is rebuilt only when its inputs change: this script, the package lists, the
# npm manifest and lockfile, Aster's ESLint config and the Go tool versions are hashed,
# and the hash is stored as the image label aster.inputs.
#
# Usage: images/sandbox/build.sh [--force]   (env: IMAGE, MIRROR, GITLEAKS_VERSION, GOSEC_VERSION)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
IMAGE="${IMAGE:-aster-sandbox:latest}"
MIRROR="${MIRROR:-}"
GITLEAKS_VERSION="${GITLEAKS_VERSION:-v8.30.1}"
GOSEC_VERSION="${GOSEC_VERSION:-v2.30.0}"
SUITE=trixie
force=0
[[ "${1:-}" == "--force" ]] && force=1

log() { printf 'image: %s\n' "$*" >&2; }

inputs="$( (cat "$here/build.sh" "$here/packages.txt" "$here/packages-apt.txt" \
	"$here/npm/package.json" "$here/npm/package-lock.json" "$here/eslint.config.mjs"
	echo "$SUITE $GITLEAKS_VERSION $GOSEC_VERSION") | sha256sum | cut -c1-16)"
if [[ $force == 0 ]]; then
	have="$(docker image inspect -f '{{ index .Config.Labels "aster.inputs" }}' "$IMAGE" 2>/dev/null || true)"
	if [[ "$have" == "$inputs" ]]; then
		log "$IMAGE is up to date (inputs $inputs)"
		exit 0
	fi
fi

for tool in debootstrap docker go npm; do
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

log "building gosec $GOSEC_VERSION (static)"
GOBIN="$work/gobin" CGO_ENABLED=0 GOFLAGS=-trimpath \
	go install -ldflags "-s -w -X main.Version=$GOSEC_VERSION" \
	"github.com/securego/gosec/v2/cmd/gosec@$GOSEC_VERSION"
install -m 0755 "$work/gobin/gosec" "$root/usr/local/bin/gosec"

# npm packages come from the machine's own npm configuration (its registry), exactly
# as the lockfile pins them; no package script runs. ast-grep's binary ships in its
# platform package; only that binary is kept.
log "installing npm analyzers (npm ci)"
mkdir -p "$work/npm"
cp "$here/npm/package.json" "$here/npm/package-lock.json" "$work/npm/"
if ! (cd "$work/npm" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >"$work/npm.log" 2>&1; then
	tail -n 30 "$work/npm.log" >&2
	exit 1
fi
astgrep="$work/npm/node_modules/@ast-grep/cli-linux-$(dpkg --print-architecture | sed 's/amd64/x64/')-gnu/ast-grep"
install -m 0755 "$astgrep" "$root/usr/local/bin/ast-grep"
rm -rf "$work/npm/node_modules/@ast-grep" "$work/npm/node_modules/.bin/ast-grep" "$work/npm/node_modules/.bin/sg"
mkdir -p "$root/opt/aster/eslint"
cp -a "$work/npm/node_modules" "$work/npm/package.json" "$work/npm/package-lock.json" "$root/opt/aster/eslint/"
install -m 0644 "$here/eslint.config.mjs" "$root/opt/aster/eslint/eslint.config.mjs"
chown -R 0:0 "$root/opt/aster"
chmod -R a+rX,go-w "$root/opt/aster"

# Every analyzer's version as the tool itself reports it, for the review report.
log "recording analyzer versions"
mkdir -p "$root/etc/aster"
# Go finds its GOROOT through /proc/self/exe.
mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
ver() { chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp "$@" 2>&1 | grep -Eom1 '[0-9]+\.[0-9]+(\.[0-9]+)?' || true; }
{
	printf '{\n'
	printf '  "gitleaks": "%s",\n' "$(ver gitleaks version)"
	printf '  "shellcheck": "%s",\n' "$(ver shellcheck --version)"
	printf '  "bandit": "%s",\n' "$(ver python3 -c 'import bandit; print(bandit.__version__)')"
	printf '  "gosec": "%s",\n' "$(ver gosec -version)"
	printf '  "eslint": "%s",\n' "$(ver node /opt/aster/eslint/node_modules/eslint/bin/eslint.js --version)"
	printf '  "eslint-plugin-security": "%s",\n' "$(ver node -p 'require("/opt/aster/eslint/node_modules/eslint-plugin-security/package.json").version')"
	printf '  "ast-grep": "%s",\n' "$(ver ast-grep --version)"
	printf '  "typescript-estree": "%s",\n' "$(ver node -p 'require("/opt/aster/eslint/node_modules/@typescript-eslint/typescript-estree/package.json").version')"
	printf '  "python3": "%s",\n' "$(ver python3 --version)"
	printf '  "go": "%s",\n' "$(ver go version)"
	printf '  "node": "%s"\n' "$(ver node --version)"
	printf '}\n'
} >"$root/etc/aster/analyzers.json"
# gosec type-checks against the standard library's export data, which Go would
# otherwise compile on every run (minutes on one CPU). The gate copies this cache
# into the sandbox's /tmp (Go needs a writable one); built with the gate's settings.
log "warming Go's build cache for the standard library"
chroot "$root" env -i PATH=/usr/bin:/bin HOME=/tmp GOCACHE=/opt/aster/go-cache GOTOOLCHAIN=local \
	GOPROXY=off GOPATH=/tmp/go CGO_ENABLED=0 go list -export -deps std >/dev/null
chmod -R a+rX,go-w "$root/opt/aster/go-cache"
umount "$root/proc"
cat "$root/etc/aster/analyzers.json" >&2
if grep -Eq '"(gitleaks|shellcheck|bandit|gosec|eslint|eslint-plugin-security|ast-grep|typescript-estree)": ""' "$root/etc/aster/analyzers.json"; then
	log "a tool did not print its version (see above)"
	exit 1
fi

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

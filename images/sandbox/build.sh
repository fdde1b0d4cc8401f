#!/usr/bin/env bash
# Build the default sandbox image (aster-sandbox:latest) with no container registry:
# debootstrap Debian trixie (minbase), add the analyzers and runtimes: Go's release
# toolchain (the golang.org/toolchain module, from the Go module proxy, checked against
# the checksum database), statically built gitleaks, gosec, actionlint, tfsec and kics
# (Go module proxy; kics with the Dockerfile and Kubernetes queries kics-queries.txt
# names), Node.js LTS and npm, ESLint with eslint-plugin-security, ast-grep and the
# TypeScript parser of Aster's JavaScript taint engine (npm, from the machine's
# configured registry, pinned by npm/package-lock.json), cppcheck and flawfinder
# (Debian), a non-root user, /etc/aster/analyzers.json (every analyzer's version, as
# the tools themselves print it), and `docker import` the result.
#
# The image is rebuilt only when its inputs change: this script, the package lists, the
# npm manifest and lockfile, Aster's ESLint config, Go's version and the Go tool
# versions are hashed, and the hash is stored as the image label aster.inputs.
#
# Usage: images/sandbox/build.sh [--force]
#   env: IMAGE (default aster-sandbox:latest), MIRROR, GO_VERSION, GITLEAKS_VERSION,
#        GOSEC_VERSION, ACTIONLINT_VERSION, TFSEC_VERSION, KICS_VERSION
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
IMAGE="${IMAGE:-aster-sandbox:latest}"
MIRROR="${MIRROR:-}"
GITLEAKS_VERSION="${GITLEAKS_VERSION:-v8.30.1}"
GOSEC_VERSION="${GOSEC_VERSION:-v2.30.0}"
GO_VERSION="${GO_VERSION:-1.26.8}"
ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.12}"
TFSEC_VERSION="${TFSEC_VERSION:-v1.28.14}"
KICS_VERSION="${KICS_VERSION:-v2.2.0}"
SUITE=trixie
force=0
[[ "${1:-}" == "--force" ]] && force=1

log() { printf 'image: %s\n' "$*" >&2; }

inputs="$( (cat "$here/build.sh" "$here/packages.txt" "$here/packages-apt.txt" \
	"$here/npm/package.json" "$here/npm/package-lock.json" "$here/eslint.config.mjs" "$here/kics-queries.txt"
	echo "$SUITE $GO_VERSION $GITLEAKS_VERSION $GOSEC_VERSION $ACTIONLINT_VERSION $TFSEC_VERSION $KICS_VERSION") | sha256sum | cut -c1-16)"
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
extra="$( (grep -v '^\s*#' "$here/packages-apt.txt" || true) | (grep -v '^\s*$' || true) | paste -sd' ' -)"
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

# Go's own release toolchain for the sandbox, as `go` fetches one when a module asks
# for a newer Go: the golang.org/toolchain module (Go module proxy, verified against
# the checksum database). Its go.env is set to GOTOOLCHAIN=local: a sandbox has no
# network, and a module that needs a newer Go is named as such by the gate.
arch="$(dpkg --print-architecture)"
log "fetching Go $GO_VERSION (golang.org/toolchain)"
godir="$(cd "$work" && go mod download -json "golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-$arch" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[[ -n "$godir" && -f "$godir/bin/go" ]] || { log "no Go $GO_VERSION toolchain for linux-$arch"; exit 1; }
cp -R "$godir" "$root/usr/local/go"
chmod -R u+w,a+rX,go-w "$root/usr/local/go"
# Module zips keep no file modes: the programs are made executable, as go does
# when it switches to a downloaded toolchain.
chmod a+x "$root/usr/local/go/bin"/* "$root/usr/local/go/pkg/tool"/*/*
# Test data of the standard library is never built.
find "$root/usr/local/go/src" -type d -name testdata -prune -exec rm -rf {} +
sed -i 's/^GOTOOLCHAIN=.*/GOTOOLCHAIN=local/' "$root/usr/local/go/go.env"
grep -qx 'GOTOOLCHAIN=local' "$root/usr/local/go/go.env" || echo 'GOTOOLCHAIN=local' >>"$root/usr/local/go/go.env"
ln -s ../go/bin/go "$root/usr/local/bin/go"
ln -s ../go/bin/gofmt "$root/usr/local/bin/gofmt"

# gotool NAME VERSION PACKAGE [LDFLAGS [TAGS]]: a static build from the Go module proxy.
gotool() {
	log "building $1 $2 (static${5:+, tags $5})"
	GOBIN="$work/gobin" CGO_ENABLED=0 GOFLAGS=-trimpath go install -tags "${5:-}" -ldflags "-s -w ${4:-}" "$3@$2"
}
# gitleaks with its RE2 regexp engine (gitleaks' own gore2regex build tag: RE2
# compiled to WebAssembly, run by wazero, pure Go): the same RE2 syntax and
# findings as Go's regexp, about 3-4x less CPU on a large tree, ~0.3 s more to
# start (docs/performance.md, "Gate speed").
gotool gitleaks "$GITLEAKS_VERSION" github.com/zricethezav/gitleaks/v8 \
	"-X github.com/zricethezav/gitleaks/v8/version.Version=$GITLEAKS_VERSION" gore2regex
gotool gosec "$GOSEC_VERSION" github.com/securego/gosec/v2/cmd/gosec "-X main.Version=$GOSEC_VERSION"
gotool actionlint "$ACTIONLINT_VERSION" github.com/rhysd/actionlint/cmd/actionlint \
	"-X github.com/rhysd/actionlint.version=$ACTIONLINT_VERSION"
gotool tfsec "$TFSEC_VERSION" github.com/aquasecurity/tfsec/cmd/tfsec \
	"-X github.com/aquasecurity/tfsec/version.Version=$TFSEC_VERSION"
gotool kics "$KICS_VERSION" github.com/Checkmarx/kics/v2/cmd/console \
	"-X github.com/Checkmarx/kics/v2/internal/constants.Version=$KICS_VERSION"
for tool in gitleaks gosec actionlint tfsec; do
	install -m 0755 "$work/gobin/$tool" "$root/usr/local/bin/$tool"
done
install -m 0755 "$work/gobin/console" "$root/usr/local/bin/kics"
# gitleaks' default rules as a file, the very ones built into the binary: the
# analyzer names it with --config, so a repository's .gitleaks.toml (which
# gitleaks reads from the scanned directory otherwise) never configures it.
gldir="$(cd "$work" && go mod download -json "github.com/zricethezav/gitleaks/v8@$GITLEAKS_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "$gldir/config/gitleaks.toml" ]] || { log "gitleaks $GITLEAKS_VERSION has no config/gitleaks.toml"; exit 1; }
install -D -m 0644 "$gldir/config/gitleaks.toml" "$root/etc/aster/gitleaks.toml"
# kics reads its queries (Rego) from disk: its libraries and the Dockerfile and
# Kubernetes queries kics-queries.txt names (security only; see there).
kicsdir="$(cd "$work" && go mod download -json "github.com/Checkmarx/kics/v2@$KICS_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[[ -d "$kicsdir/assets/queries" ]] || { log "kics $KICS_VERSION has no assets/queries"; exit 1; }
mkdir -p "$root/opt/aster/kics/queries"
cp -R "$kicsdir/assets/libraries" "$root/opt/aster/kics/libraries"
while read -r q; do
	[[ -z "$q" || "$q" == \#* ]] && continue
	[[ "$q" =~ ^[a-z0-9_]+/[a-z0-9_]+$ && -f "$kicsdir/assets/queries/$q/query.rego" ]] || {
		log "kics $KICS_VERSION has no query $q (kics-queries.txt)"
		exit 1
	}
	mkdir -p "$root/opt/aster/kics/queries/$q"
	cp "$kicsdir/assets/queries/$q/metadata.json" "$kicsdir/assets/queries/$q/query.rego" "$root/opt/aster/kics/queries/$q/"
done <"$here/kics-queries.txt"
chmod -R u+w,a+rX,go-w "$root/opt/aster/kics"

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
nodearch="$(echo "$arch" | sed 's/amd64/x64/')"
astgrep="$work/npm/node_modules/@ast-grep/cli-linux-$nodearch-gnu/ast-grep"
install -m 0755 "$astgrep" "$root/usr/local/bin/ast-grep"
# Node.js (an LTS release, its official linux binary as the node-linux-* package
# ships it) and npm (for the install phase of test runs) are the image's runtime.
install -m 0755 "$work/npm/node_modules/node-linux-$nodearch/bin/node" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules"
cp -R "$work/npm/node_modules/npm" "$root/usr/local/lib/node_modules/npm"
chmod -R u+w,a+rX,go-w "$root/usr/local/lib/node_modules"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
rm -rf "$work/npm/node_modules/@ast-grep" "$work/npm/node_modules"/node-linux-* "$work/npm/node_modules/npm" \
	"$work/npm/node_modules/.bin"/{ast-grep,sg,node,npm,npx}
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
	printf '  "actionlint": "%s",\n' "$(ver actionlint -version)"
	printf '  "tfsec": "%s",\n' "$(ver tfsec --version)"
	printf '  "kics": "%s",\n' "$(ver kics version)"
	printf '  "cppcheck": "%s",\n' "$(ver cppcheck --version)"
	printf '  "flawfinder": "%s",\n' "$(ver flawfinder --version)"
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
chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp GOCACHE=/opt/aster/go-cache GOTOOLCHAIN=local \
	GOPROXY=off GOPATH=/tmp/go CGO_ENABLED=0 go list -export -deps std >/dev/null
chmod -R a+rX,go-w "$root/opt/aster/go-cache"
umount "$root/proc"
cat "$root/etc/aster/analyzers.json" >&2
if grep -Eq '"(gitleaks|shellcheck|bandit|gosec|eslint|eslint-plugin-security|ast-grep|actionlint|tfsec|kics|cppcheck|flawfinder|typescript-estree|go|node)": ""' "$root/etc/aster/analyzers.json"; then
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

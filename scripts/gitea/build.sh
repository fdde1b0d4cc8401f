#!/usr/bin/env bash
# Build the pinned Gitea the forge tests run against, from the Go module proxy: no download
# site, no npm (the API and git over HTTP need no web assets). Cached by version like the
# Kubernetes binaries (scripts/k8s/build.sh).
#
# Everything lands in $ASTER_GITEA_CACHE/<version>/ (default /var/cache/aster/gitea/v1.27.3):
#   dist/       gitea (static, pure-Go SQLite), options/, public/, templates/ beside it:
#               what the tests' ASTER_TEST_GITEA names
#   gomod/      Go module cache         go-build/  Go build cache
#   logs/       build.log               stamps/gitea  "gitea <version> recipe <n>"
# A run with the stamp and dist/gitea present returns at once; a cold build takes about six
# minutes on two cores. The cache is never removed here; --force rebuilds dist/ in place of it.
#
# Run as root, it also makes sure the system user the tests run Gitea as exists
# ($ASTER_TEST_GITEA_USER, default aster-gitea: Gitea refuses to run as root).
#
# Usage: scripts/gitea/build.sh [--force] [--print-dist]
#   --print-dist  print the dist directory (and nothing else) on stdout when done
# Env:   ASTER_GITEA_CACHE, ASTER_GITEA_VERSION, ASTER_GITEA_BUILD_JOBS (default 2),
#        ASTER_TEST_GITEA_USER
set -euo pipefail

VERSION="${ASTER_GITEA_VERSION:-v1.27.3}"
CACHE_ROOT="${ASTER_GITEA_CACHE:-/var/cache/aster/gitea}"
CACHE="$CACHE_ROOT/$VERSION"
DIST="$CACHE/dist"
JOBS="${ASTER_GITEA_BUILD_JOBS:-2}"
# Bump when the recipe (flags, tags, layout) changes so cached outputs are rebuilt.
RECIPE=1
STAMP="gitea $VERSION recipe $RECIPE"

force=0 print=0
for a in "$@"; do
	case $a in
	--force) force=1 ;;
	--print-dist) print=1 ;;
	-h | --help)
		awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
		exit 0
		;;
	*)
		echo "gitea build: unknown argument $a (see --help)" >&2
		exit 2
		;;
	esac
done

log() { printf '[gitea build] %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}
done_() {
	[[ $print == 0 ]] || printf '%s\n' "$DIST"
	exit 0
}

# The tests' Gitea user: a system account without a home or a shell, made once.
ensure_user() {
	local name="${ASTER_TEST_GITEA_USER:-aster-gitea}"
	[[ $(id -u) == 0 ]] || return 0
	id -u "$name" >/dev/null 2>&1 && return 0
	useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$name" ||
		die "cannot create the system user $name"
	log "created the system user $name (the tests run Gitea as it)"
}
ensure_user

cached() {
	[[ $force == 0 && -f "$CACHE/stamps/gitea" && "$(cat "$CACHE/stamps/gitea")" == "$STAMP" ]] &&
		[[ -x "$DIST/gitea" && -d "$DIST/options" && -d "$DIST/templates" ]]
}

if cached; then
	log "cached: $DIST (Gitea $VERSION)"
	done_
fi

mkdir -p "$CACHE"/{stamps,logs} 2>/dev/null || die "cannot create $CACHE (run as root or set ASTER_GITEA_CACHE)"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
	log "another build holds $CACHE/.lock; waiting"
	flock 9
fi
if cached; then
	log "cached (built by the concurrent run)"
	done_
fi

if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then PATH=/usr/local/go/bin:$PATH; fi
command -v go >/dev/null || die "go not found in PATH (need the Go that Gitea $VERSION's go.mod asks for)"

export GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/go-build"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS=-buildvcs=false
logf="$CACHE/logs/build.log"
: >"$logf"
t0=$SECONDS
log "Go $(go env GOVERSION), GOPROXY=$(go env GOPROXY); fetching code.gitea.io/gitea@$VERSION"
mkdir -p "$CACHE/download"
(cd "$CACHE/download" && go mod download code.gitea.io/gitea@"$VERSION") >>"$logf" 2>&1 || {
	tail -n 20 "$logf" >&2
	die "go mod download code.gitea.io/gitea@$VERSION failed (full log: $logf)"
}
src="$GOMODCACHE/code.gitea.io/gitea@$VERSION"
[[ -f "$src/go.mod" ]] || die "no module source at $src"

log "compiling (no build tags: SQLite is the pure-Go driver); about six minutes cold on two cores"
out="$CACHE/dist.partial"
rm -rf "$out"
mkdir -p "$out"
(cd "$src" && go build -p "$JOBS" -trimpath -ldflags "-s -w -X main.Version=${VERSION#v}" -o "$out/gitea" .) >>"$logf" 2>&1 || {
	tail -n 40 "$logf" >&2
	die "go build failed (full log: $logf)"
}
for d in options public templates; do
	cp -a "$src/$d" "$out/$d"
	chmod -R u+w "$out/$d" # the module cache is read-only
done
v="$("$out/gitea" --version 2>&1 || true)"
[[ $v == *"${VERSION#v}"* ]] || die "the binary reports '$v', expected $VERSION"
chmod -R a+rX "$out"
rm -rf "$DIST.old"
[[ ! -e "$DIST" ]] || mv "$DIST" "$DIST.old"
mv "$out" "$DIST"
rm -rf "$DIST.old"
printf '%s\n' "$STAMP" >"$CACHE/stamps/gitea"
log "done in $((SECONDS - t0))s: $v -> $DIST"
done_

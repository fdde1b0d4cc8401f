#!/usr/bin/env bash
# Build a single-node Kubernetes from the Go module proxy, with no container registry and no
# download site: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl
# (Kubernetes $ASTER_K8S_VERSION), etcd + etcdctl ($ASTER_ETCD_VERSION), and the pause image
# (build/pause/linux/pause.c from the kubernetes module, gcc -static) as a docker-archive tarball.
#
# Everything lands in $ASTER_K8S_CACHE/<k8s version>/ (default /var/cache/aster/k8s/v1.33.13):
#   bin/          the binaries            images/pause.tar, images/pause.ref
#   gomod/        Go module cache         go-build/  Go build cache
#   src/          the throwaway wrapper modules (never part of the repository)
#   stamps/       one file per finished component
# A run with the stamps present returns in well under a second; with only the Go caches present
# it relinks in about a minute.
#
# Usage: scripts/k8s/build.sh [--force]
# Env:   ASTER_K8S_CACHE, ASTER_K8S_VERSION, ASTER_ETCD_VERSION, ASTER_K8S_BUILD_JOBS (default 2),
#        ASTER_K8S_COMPONENTS (full or minimal, see lib.sh)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export K8S_LOG_TAG=build
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

# Bump when the recipe (flags, tags, image layout) changes so cached outputs are rebuilt.
RECIPE=1
JOBS="${ASTER_K8S_BUILD_JOBS:-2}"
force=0
[[ "${1:-}" == "--force" ]] && force=1

KUBE_CMDS=("${K8S_KUBE_CMDS[@]}")

stamp_ok() { # stamp_ok NAME CONTENT
	[[ $force == 0 && -f "$K8S_CACHE/stamps/$1" && "$(cat "$K8S_CACHE/stamps/$1")" == "$2" ]]
}
stamp_write() { printf '%s\n' "$2" >"$K8S_CACHE/stamps/$1"; }

k8s_stamp="kubernetes $K8S_VERSION recipe $RECIPE"
etcd_stamp="etcd $ETCD_VERSION recipe $RECIPE"
pause_stamp="pause $K8S_VERSION recipe $RECIPE"

all_cached() {
	local b
	stamp_ok kubernetes "$k8s_stamp" && stamp_ok etcd "$etcd_stamp" && stamp_ok pause "$pause_stamp" || return 1
	for b in "${KUBE_CMDS[@]}" "${K8S_ETCD_CMDS[@]}"; do [[ -x "$K8S_BIN/$b" ]] || return 1; done
	[[ -s "$K8S_IMAGES/pause.tar" && -s "$K8S_IMAGES/pause.ref" ]]
}

if all_cached; then
	k8s_log "cached: $K8S_BIN (Kubernetes $K8S_VERSION, etcd $ETCD_VERSION) and $K8S_IMAGES/pause.tar"
	exit 0
fi

mkdir -p "$K8S_CACHE"/{bin,images,stamps,src} || k8s_die "cannot create $K8S_CACHE (run as root or set ASTER_K8S_CACHE)"

# One build at a time per cache directory (up.sh may call us while a manual build runs).
exec 9>"$K8S_CACHE/.lock"
if ! flock -n 9; then
	k8s_log "another build holds $K8S_CACHE/.lock; waiting"
	flock 9
fi
if all_cached; then
	k8s_log "cached (built by the concurrent run)"
	exit 0
fi

if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then PATH=/usr/local/go/bin:$PATH; fi
command -v go >/dev/null || k8s_die "go not found in PATH (need Go >= 1.24)"
if ! command -v gcc >/dev/null || [[ ! -e /usr/lib/x86_64-linux-gnu/libc.a && ! -e /usr/lib/libc.a ]]; then
	k8s_log "installing gcc and libc6-dev (for the static pause binary)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc libc6-dev >/dev/null
fi

logdir="$K8S_CACHE/logs"
mkdir -p "$logdir"
export GOMODCACHE="$K8S_CACHE/gomod"
export GOCACHE="$K8S_CACHE/go-build"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS=-buildvcs=false
export GOOS=linux GOARCH=amd64
k8s_log "Go $(go env GOVERSION), GOPROXY=$(go env GOPROXY), -p $JOBS, caches under $K8S_CACHE"

# Background progress: packages compiled so far and memory in use, every 30 s.
hb_pid=
peak_mem_mb=0
heartbeat_start() { # heartbeat_start LABEL LOGFILE TOTAL
	local label=$1 logf=$2 total=$3
	(
		while sleep 30; do
			n=$(grep -c . "$logf" 2>/dev/null || true)
			used=$(free -m | awk '/^Mem:/{print $3}')
			k8s_log "  $label: ${n:-0}/$total packages compiled, host memory used ${used} MiB"
		done
	) &
	hb_pid=$!
}
heartbeat_stop() {
	if [[ -n $hb_pid ]]; then
		kill "$hb_pid" 2>/dev/null || true
		wait "$hb_pid" 2>/dev/null || true
		hb_pid=
	fi
}
trap heartbeat_stop EXIT

# Peak memory of the whole build (largest single process, as reported by GNU time).
timed_go() { # timed_go LOGFILE go-args...
	local logf=$1
	shift
	local rc=0 what="$*"
	/usr/bin/time -f '%M' -o "$logf.maxrss" go "$@" >>"$logf" 2>&1 || rc=$?
	local kb
	kb=$(tail -n1 "$logf.maxrss" 2>/dev/null || echo 0)
	[[ $kb =~ ^[0-9]+$ ]] && ((kb / 1024 > peak_mem_mb)) && peak_mem_mb=$((kb / 1024))
	if ((rc != 0)); then
		tail -n 40 "$logf" >&2
		k8s_die "go ${what:0:120} failed (full log: $logf)"
	fi
}

module_info_field() { # module_info_field MODULE VERSION FIELD  (Origin.Hash / Time from the proxy's .info)
	local f="$GOMODCACHE/cache/download/$1/@v/$2.info"
	case $3 in
	hash) sed -n 's/.*"Hash":"\([0-9a-f]*\)".*/\1/p' "$f" ;;
	time) sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$f" ;;
	esac
}

build_kubernetes() {
	local t0=$SECONDS src="$K8S_CACHE/src/kubernetes" log="$logdir/kubernetes.log"
	: >"$log"
	k8s_log "kubernetes $K8S_VERSION: fetching k8s.io/kubernetes from the module proxy"
	mkdir -p "$src"
	(cd "$src" && go mod download k8s.io/kubernetes@"$K8S_VERSION") >>"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		k8s_die "go mod download k8s.io/kubernetes@$K8S_VERSION failed"
	}
	local upmod="$GOMODCACHE/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
	local staging_version="v0.${K8S_VERSION#v1.}"
	local replaces nrep nall
	replaces=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*#\t\1 => \1 '"$staging_version"'#p' "$upmod")
	nrep=$(grep -c . <<<"$replaces" || true)
	nall=$(grep -c '=>' "$upmod" || true)
	((nrep > 0)) || k8s_die "no staging replace directives found in $upmod"
	((nrep == nall)) || k8s_log "warning: $upmod has $nall replace directives, only $nrep are staging modules"
	{
		echo "// Throwaway wrapper generated by scripts/k8s/build.sh; not part of any repository."
		echo "module aster.local/k8s-build"
		echo
		grep -E '^(go|godebug) ' "$upmod"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		echo "replace ("
		echo "$replaces"
		echo ")"
	} >"$src/go.mod"
	k8s_log "kubernetes: wrapper module with $nrep staging replaces (=> $staging_version); resolving dependencies"
	local pkgs=() c want=()
	# Only what is missing (a minimal cache asked for the full set, or a forced rebuild).
	for c in "${KUBE_CMDS[@]}"; do
		if [[ $force == 1 || ! -x "$K8S_BIN/$c" ]] || ! stamp_ok kubernetes "$k8s_stamp"; then want+=("$c"); fi
	done
	for c in "${want[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	local getargs=()
	for c in "${pkgs[@]}"; do getargs+=("$c@$K8S_VERSION"); done
	timed_go "$log" -C "$src" get "${getargs[@]}"
	k8s_log "kubernetes: modules ready ($(du -sh "$GOMODCACHE" 2>/dev/null | cut -f1) module cache) after $((SECONDS - t0))s"

	local commit date minor ldflags="" p tags=selinux,notest,grpcnotrace
	commit=$(module_info_field k8s.io/kubernetes "$K8S_VERSION" hash)
	date=$(module_info_field k8s.io/kubernetes "$K8S_VERSION" time)
	minor=${K8S_VERSION#v1.}
	minor=${minor%%.*}
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
		ldflags+=" -X $p.gitCommit=${commit:-unknown} -X $p.gitTreeState=clean -X $p.buildDate=${date:-1970-01-01T00:00:00Z}"
	done
	local total
	total=$(go -C "$src" list -tags "$tags" -deps "${pkgs[@]}" 2>>"$log" | grep -c . || true)
	k8s_log "kubernetes: compiling ${want[*]} ($total packages; a cold build of all five takes 13-16 min on 2 cores)"
	local out="$K8S_CACHE/bin.partial"
	rm -rf "$out"
	mkdir -p "$out"
	local blog="$logdir/kubernetes-build.log"
	: >"$blog"
	heartbeat_start kubernetes "$blog" "$total"
	timed_go "$blog" -C "$src" build -v -p "$JOBS" -trimpath -tags "$tags" \
		-ldflags "$ldflags -s -w" -o "$out/" "${pkgs[@]}"
	heartbeat_stop
	for c in "${want[@]}"; do
		local v
		if [[ $c == kubectl ]]; then v=$("$out/$c" version --client 2>&1); else v=$("$out/$c" --version 2>&1); fi
		v=${v%%$'\n'*}
		[[ $v == *"$K8S_VERSION"* ]] || k8s_die "$c reports '$v', expected $K8S_VERSION"
		mv -f "$out/$c" "$K8S_BIN/$c"
	done
	rm -rf "$out"
	stamp_write kubernetes "$k8s_stamp"
	k8s_log "kubernetes: done in $((SECONDS - t0))s ($("$K8S_BIN/kube-apiserver" --version))"
}

build_etcd() {
	local t0=$SECONDS src="$K8S_CACHE/src/etcd" log="$logdir/etcd.log"
	: >"$log"
	local ev=${ETCD_VERSION#v} minor patch
	IFS=. read -r _ minor patch <<<"$ev"
	local v2version
	v2version="v2.3$(printf '%02d' "$minor").$patch"
	k8s_log "etcd $ETCD_VERSION: fetching go.etcd.io/etcd/{server,etcdctl}/v3 from the module proxy"
	mkdir -p "$src"
	(cd "$src" && go mod download go.etcd.io/etcd/server/v3@"$ETCD_VERSION" go.etcd.io/etcd/etcdctl/v3@"$ETCD_VERSION") >>"$log" 2>&1 || {
		tail -n 20 "$log" >&2
		k8s_die "go mod download etcd $ETCD_VERSION failed"
	}
	local dl="$GOMODCACHE/cache/download/go.etcd.io/etcd"
	local replaces
	replaces=$(sed -n 's#^[[:space:]]*\(go\.etcd\.io/etcd/[^ ]*\) => \.\./.*#\1#p' \
		"$dl/server/v3/@v/$ETCD_VERSION.mod" "$dl/etcdctl/v3/@v/$ETCD_VERSION.mod" | sort -u)
	{
		echo "// Throwaway wrapper generated by scripts/k8s/build.sh; not part of any repository."
		echo "module aster.local/etcd-build"
		echo
		grep -E '^go ' "$dl/server/v3/@v/$ETCD_VERSION.mod"
		echo
		echo "require ("
		echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
		echo "	go.etcd.io/etcd/etcdctl/v3 $ETCD_VERSION"
		echo ")"
		echo
		echo "replace ("
		local m
		for m in $replaces; do
			if [[ $m == */v2 ]]; then echo "	$m => $m $v2version"; else echo "	$m => $m $ETCD_VERSION"; fi
		done
		echo ")"
	} >"$src/go.mod"
	k8s_log "etcd: wrapper module with $(wc -w <<<"$replaces") replaces; resolving dependencies"
	timed_go "$log" -C "$src" get go.etcd.io/etcd/server/v3@"$ETCD_VERSION" go.etcd.io/etcd/etcdctl/v3@"$ETCD_VERSION"
	local commit
	commit=$(module_info_field go.etcd.io/etcd/server/v3 "$ETCD_VERSION" hash)
	local ldflags="-X go.etcd.io/etcd/api/v3/version.GitSHA=${commit:0:8} -s -w"
	local blog="$logdir/etcd-build.log"
	: >"$blog"
	k8s_log "etcd: compiling etcd and etcdctl"
	heartbeat_start etcd "$blog" "?"
	timed_go "$blog" -C "$src" build -v -p "$JOBS" -trimpath -ldflags "$ldflags" -o "$K8S_BIN/etcd.partial" go.etcd.io/etcd/server/v3
	if [[ " ${K8S_ETCD_CMDS[*]} " == *" etcdctl "* ]]; then
		timed_go "$blog" -C "$src" build -v -p "$JOBS" -trimpath -ldflags "$ldflags" -o "$K8S_BIN/etcdctl.partial" go.etcd.io/etcd/etcdctl/v3
	fi
	heartbeat_stop
	local v
	v=$("$K8S_BIN/etcd.partial" --version)
	v=${v%%$'\n'*}
	[[ $v == *"${ETCD_VERSION#v}"* ]] || k8s_die "etcd reports '$v', expected $ETCD_VERSION"
	mv -f "$K8S_BIN/etcd.partial" "$K8S_BIN/etcd"
	[[ ! -f "$K8S_BIN/etcdctl.partial" ]] || mv -f "$K8S_BIN/etcdctl.partial" "$K8S_BIN/etcdctl"
	stamp_write etcd "$etcd_stamp"
	k8s_log "etcd: done in $((SECONDS - t0))s ($v)"
}

build_pause() {
	local t0=$SECONDS
	local kdir="$GOMODCACHE/k8s.io/kubernetes@$K8S_VERSION"
	if [[ ! -f "$kdir/build/pause/linux/pause.c" ]]; then
		(cd "$K8S_CACHE/src" && go mod download k8s.io/kubernetes@"$K8S_VERSION") || k8s_die "cannot fetch k8s.io/kubernetes@$K8S_VERSION"
	fi
	local tag commit
	tag=$(sed -n 's/^TAG ?= *//p' "$kdir/build/pause/Makefile")
	[[ -n $tag ]] || k8s_die "cannot read the pause TAG from $kdir/build/pause/Makefile"
	commit=$(module_info_field k8s.io/kubernetes "$K8S_VERSION" hash)
	local ref="registry.k8s.io/pause:$tag"
	local tmp
	tmp=$(mktemp -d)
	mkdir "$tmp/rootfs"
	# Same flags as build/pause/Makefile (CFLAGS), with the host gcc instead of kube-cross.
	gcc -Os -Wall -Werror -static -DVERSION="v$tag-${commit:0:8}" -o "$tmp/rootfs/pause" "$kdir/build/pause/linux/pause.c"
	strip "$tmp/rootfs/pause" 2>/dev/null || true
	chmod 0755 "$tmp/rootfs/pause"
	[[ "$("$tmp/rootfs/pause" -v)" == *"v$tag"* ]] || k8s_die "pause binary does not report v$tag"
	k8s_pack_image "$ref" "$tmp/rootfs" "$K8S_IMAGES/pause.tar" '{"Entrypoint":["/pause"],"User":"65535:65535","WorkingDir":"/"}'
	printf '%s\n' "$ref" >"$K8S_IMAGES/pause.ref"
	rm -rf "$tmp"
	stamp_write pause "$pause_stamp"
	k8s_log "pause: $ref -> $K8S_IMAGES/pause.tar ($(stat -c %s "$K8S_IMAGES/pause.tar") bytes) in $((SECONDS - t0))s"
}

t_start=$SECONDS
kube_missing() {
	local c
	for c in "${KUBE_CMDS[@]}"; do [[ -x "$K8S_BIN/$c" ]] || return 0; done
	return 1
}
etcd_missing() {
	local c
	for c in "${K8S_ETCD_CMDS[@]}"; do [[ -x "$K8S_BIN/$c" ]] || return 0; done
	return 1
}
if ! stamp_ok kubernetes "$k8s_stamp" || kube_missing; then build_kubernetes; fi
if ! stamp_ok etcd "$etcd_stamp" || etcd_missing; then build_etcd; fi
if ! stamp_ok pause "$pause_stamp" || [[ ! -s "$K8S_IMAGES/pause.tar" ]]; then build_pause; fi

k8s_log "all done in $((SECONDS - t_start))s; largest single process ${peak_mem_mb} MiB RSS"
k8s_log "binaries: $K8S_BIN ($(du -sh "$K8S_BIN" | cut -f1)); cache total $(du -sh "$K8S_CACHE" | cut -f1)"

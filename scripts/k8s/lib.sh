# shellcheck shell=bash disable=SC2034
# Shared settings for scripts/k8s/{build,up,down}.sh. Sourced, never run.
#
# Every path and port can be overridden from the environment; the defaults are what the
# documentation (docs/kubernetes.md, "A real single-node Kubernetes for tests") describes.

K8S_VERSION="${ASTER_K8S_VERSION:-v1.33.13}"
ETCD_VERSION="${ASTER_ETCD_VERSION:-v3.5.21}"

# What to build: "full" (default: etcd, etcdctl, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kubectl) or "minimal" (what the Go tests need, about a sixth less to
# compile: etcd, kube-apiserver, kube-scheduler, kubelet; without a controller-manager the API
# server runs without the ServiceAccount admission plugin). A full cache serves both.
K8S_COMPONENTS="${ASTER_K8S_COMPONENTS:-full}"
case $K8S_COMPONENTS in
full) K8S_KUBE_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl) K8S_ETCD_CMDS=(etcd etcdctl) ;;
minimal) K8S_KUBE_CMDS=(kube-apiserver kube-scheduler kubelet) K8S_ETCD_CMDS=(etcd) ;;
*)
	printf 'ASTER_K8S_COMPONENTS=%s: want full or minimal\n' "$K8S_COMPONENTS" >&2
	exit 2
	;;
esac

# Build cache: binaries, images, Go module and build caches, keyed by the Kubernetes version.
K8S_CACHE_ROOT="${ASTER_K8S_CACHE:-/var/cache/aster/k8s}"
K8S_CACHE="$K8S_CACHE_ROOT/$K8S_VERSION"
K8S_BIN="$K8S_CACHE/bin"
K8S_IMAGES="$K8S_CACHE/images"

# Cluster state (removed by down.sh), runtime files, logs.
K8S_STATE="${ASTER_K8S_STATE:-/var/lib/aster-k8s}"
K8S_RUN="${ASTER_K8S_RUN:-/run/aster-k8s}"
K8S_LOGS="${ASTER_K8S_LOGS:-/var/log/aster-k8s}"
K8S_KUBECONFIG="${ASTER_K8S_KUBECONFIG:-$K8S_STATE/kubeconfig}"
# containerd's root (image content and unpacked snapshots). down.sh keeps it, so the next up.sh
# need not import the images again; `down.sh --purge` removes it too.
K8S_IMAGE_STORE="$K8S_STATE/containerd-root"

# Everything listens on 127.0.0.1 only.
K8S_API_PORT="${ASTER_K8S_API_PORT:-6443}"
K8S_ETCD_CLIENT_PORT="${ASTER_K8S_ETCD_CLIENT_PORT:-2379}"
K8S_ETCD_PEER_PORT="${ASTER_K8S_ETCD_PEER_PORT:-2380}"
K8S_KUBELET_PORT="${ASTER_K8S_KUBELET_PORT:-10250}"
K8S_KUBELET_HEALTHZ_PORT="${ASTER_K8S_KUBELET_HEALTHZ_PORT:-10248}"
K8S_CM_PORT="${ASTER_K8S_CONTROLLER_MANAGER_PORT:-10257}"
K8S_SCHED_PORT="${ASTER_K8S_SCHEDULER_PORT:-10259}"

# The separate containerd (Docker's own containerd is never touched).
K8S_CONTAINERD_SOCK="$K8S_RUN/containerd/containerd.sock"
K8S_CNI_BRIDGE="${ASTER_K8S_CNI_BRIDGE:-aster-cni0}"
K8S_POD_SUBNET="${ASTER_K8S_POD_SUBNET:-10.88.76.0/24}"
K8S_SERVICE_SUBNET="${ASTER_K8S_SERVICE_SUBNET:-10.96.76.0/24}"
K8S_NODE_NAME=localhost
# Per-Pod process cap of the kubelet (podPidsLimit), and the size of the tmpfs for Pod logs.
K8S_POD_PIDS_LIMIT="${ASTER_K8S_POD_PIDS_LIMIT:-128}"
K8S_POD_LOGS_SIZE="${ASTER_K8S_POD_LOGS_SIZE:-1g}"

# Host changes recorded by up.sh and undone by down.sh.
K8S_HOST_RECORD="$K8S_STATE/host-record"

# Sysctls that the kubelet (protectKernelDefaults=false) or the bridge CNI plugin may set.
K8S_SYSCTLS=(
	vm.overcommit_memory
	vm.panic_on_oom
	kernel.panic
	kernel.panic_on_oops
	kernel.keys.root_maxkeys
	kernel.keys.root_maxbytes
	net.ipv4.ip_forward
	net.ipv6.conf.all.forwarding
)

K8S_LOG_TAG="${K8S_LOG_TAG:-k8s}"
k8s_log() { printf '[%s %4ds] %s\n' "$K8S_LOG_TAG" "$SECONDS" "$*" >&2; }
k8s_die() {
	k8s_log "ERROR: $*"
	exit 1
}

k8s_require_root() {
	[[ $(id -u) == 0 ]] || k8s_die "must run as root"
}

# k8s_pack_image NAME:TAG ROOTFS_DIR OUT.tar CONFIG_JSON_FRAGMENT
# Packs a directory as a single-layer image in the docker-archive format (what `docker save`
# writes), importable with `ctr -n k8s.io images import` or `docker load`. The fragment is the
# image's "config" object, e.g. {"Entrypoint":["/pause"],"User":"65535:65535"}. Deterministic:
# the same inputs give the same image id.
k8s_pack_image() {
	local ref=$1 rootfs=$2 out=$3 config=$4
	local tmp layer_sha cfg cfg_sha
	tmp=$(mktemp -d)
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
		-C "$rootfs" -cf "$tmp/layer.tar" .
	layer_sha=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
	mkdir "$tmp/$layer_sha"
	mv "$tmp/layer.tar" "$tmp/$layer_sha/layer.tar"
	cfg=$(printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"scripts/k8s k8s_pack_image"}]}' \
		"$config" "$layer_sha")
	cfg_sha=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
	printf '%s' "$cfg" >"$tmp/$cfg_sha.json"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' \
		"$cfg_sha" "$ref" "$layer_sha" >"$tmp/manifest.json"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
		-C "$tmp" -cf "$out.tmp" manifest.json "$cfg_sha.json" "$layer_sha"
	mv "$out.tmp" "$out"
	rm -rf "$tmp"
}

# Our daemons' pid files live here: NAME.pid and NAME.exe (the binary we started).
PIDS="$K8S_RUN/pids"

# daemon_pid NAME: prints the pid of our daemon NAME if it is still alive and still the binary
# we started (a reused pid is not ours); fails otherwise.
daemon_pid() {
	local pf="$PIDS/$1.pid" pid
	[[ -f $pf ]] || return 1
	pid=$(cat "$pf")
	[[ -n $pid && -d /proc/$pid ]] || return 1
	[[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$(cat "$PIDS/$1.exe" 2>/dev/null)" ]] || return 1
	echo "$pid"
}

#!/usr/bin/env bash
# Bring up a single-node Kubernetes on this machine for tests (idempotent).
#
# containerd (a separate instance with its own config, socket, root and state; Docker's own
# containerd is left alone), etcd, kube-apiserver (127.0.0.1 only), kube-controller-manager,
# kube-scheduler and a kubelet whose node is named `localhost`, all started from the binaries that
# scripts/k8s/build.sh caches. Imports the pause image and, when Docker has it, aster-sandbox:latest
# into containerd's k8s.io namespace (Pods use imagePullPolicy: Never). Waits for the node to be
# Ready, applies deploy/kubernetes' namespaces and RBAC, builds and imports this checkout's
# aster-init:latest (scripts/k8s/images.sh --import --init-only latest), runs a smoke Pod to completion, and
# prints the timings.
#
# Every host change is recorded in $ASTER_K8S_STATE/host-record first, so that down.sh can undo it.
# Logs: /var/log/aster-k8s/<component>.log. Kubeconfig: /var/lib/aster-k8s/kubeconfig.
#
# Usage: scripts/k8s/up.sh [--packages-only]   (env: see scripts/k8s/lib.sh; ASTER_K8S_SKIP_SMOKE=1)
#   --packages-only  install the missing Debian packages and stop (scripts/k8s/ci.sh start-build)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export K8S_LOG_TAG=up
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"
k8s_require_root

PKI="$K8S_STATE/pki"
CNI_CONF_DIR="$K8S_STATE/cni/net.d"
CNI_BIN_DIR=/usr/lib/cni
SA_IMAGE="${ASTER_K8S_SANDBOX_IMAGE:-aster-sandbox:latest}"
K8S_DEPLOY="$(cd "$here/../../deploy/kubernetes" && pwd)"
API_URL="https://127.0.0.1:$K8S_API_PORT"
CTR=(ctr --address "$K8S_CONTAINERD_SOCK" --namespace k8s.io)

t_total=$SECONDS

# --- 1. Debian packages -------------------------------------------------------------------------
ensure_packages() {
	local -A want=(
		[/usr/bin/containerd]=containerd
		[/usr/bin/containerd-shim-runc-v2]=containerd
		[/usr/bin/ctr]=containerd
		[/usr/sbin/runc]=runc
		[$CNI_BIN_DIR/bridge]=containernetworking-plugins
		[$CNI_BIN_DIR/host-local]=containernetworking-plugins
		[$CNI_BIN_DIR/loopback]=containernetworking-plugins
		[/usr/sbin/iptables]=iptables
		[/usr/bin/openssl]=openssl
		[/usr/sbin/ip]=iproute2
		[/usr/bin/findmnt]=util-linux
		[/usr/bin/nsenter]=util-linux
		[/usr/bin/flock]=util-linux
		[/usr/bin/ss]=iproute2
		[/usr/bin/pgrep]=procps
		[/usr/bin/gcc]=gcc
		[/usr/include/stdio.h]=libc6-dev
		[/usr/bin/time]=time
		[/usr/bin/curl]=curl
		[/usr/bin/mount]=mount
		[/usr/lib/python3/dist-packages/yaml/__init__.py]=python3-yaml
	)
	local f missing=()
	for f in "${!want[@]}"; do [[ -e $f ]] || missing+=("${want[$f]}"); done
	((${#missing[@]})) || return 0
	mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
	k8s_log "installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$K8S_LOGS/apt.log" 2>&1; then
		apt-get update -q >>"$K8S_LOGS/apt.log" 2>&1
		apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$K8S_LOGS/apt.log" 2>&1 ||
			k8s_die "apt-get install ${missing[*]} failed (see $K8S_LOGS/apt.log)"
	fi
	# Packages stay installed after down.sh; this list says which ones up.sh added.
	printf '%s\n' "${missing[@]}" >>"$K8S_LOGS/packages-installed-by-up.txt"
}

# --- helpers -------------------------------------------------------------------------------------

start_daemon() { # start_daemon NAME BINARY ARGS...
	local name=$1 bin=$2
	shift 2
	if daemon_pid "$name" >/dev/null; then
		k8s_log "$name already running (pid $(daemon_pid "$name"))"
		return 0
	fi
	local log="$K8S_LOGS/$name.log"
	printf '\n===== %s starting %s =====\n' "$(date -Is)" "$name" >>"$log"
	# setsid: the daemons outlive this script and are not in its process group. 8>&-: they must
	# not inherit (and so hold forever) the lock that this script takes on fd 8.
	setsid "$bin" "$@" >>"$log" 2>&1 </dev/null 8>&- &
	local pid=$!
	echo "$pid" >"$PIDS/$name.pid"
	readlink -f "$bin" >"$PIDS/$name.exe"
	sleep 0.3
	daemon_pid "$name" >/dev/null || {
		tail -n 30 "$log" >&2
		k8s_die "$name exited at once (log: $log)"
	}
	k8s_log "$name started (pid $pid, log $log)"
}

wait_for() { # wait_for DESCRIPTION TIMEOUT_S NAME_OF_DAEMON_TO_WATCH COMMAND...
	local what=$1 timeout=$2 daemon=$3
	shift 3
	local start=$SECONDS
	until "$@" >/dev/null 2>&1; do
		if [[ -n $daemon ]] && ! daemon_pid "$daemon" >/dev/null; then
			tail -n 30 "$K8S_LOGS/$daemon.log" >&2
			k8s_die "$daemon died while waiting for $what (log: $K8S_LOGS/$daemon.log)"
		fi
		if ((SECONDS - start > timeout)); then
			[[ -n $daemon ]] && tail -n 30 "$K8S_LOGS/$daemon.log" >&2
			k8s_die "timed out after ${timeout}s waiting for $what"
		fi
		sleep 0.2
	done
}

port_free_or_ours() { # port_free_or_ours PORT NAME
	local line
	line=$(ss -ltnpH "sport = :$1" 2>/dev/null || true)
	[[ -z $line ]] && return 0
	local pid
	pid=$(daemon_pid "$2" 2>/dev/null || true)
	[[ -n $pid && $line == *"pid=$pid,"* ]] && return 0
	k8s_die "port $1 (for $2) is already in use: $line"
}

# api METHOD PATH [curl args...]: the API server as aster-admin (no kubectl needed: a minimal
# build has none).
api() {
	local method=$1 path=$2
	shift 2
	# (A user agent that is not curl: the API server pretty-prints for curl.)
	curl -sS --fail --max-time 10 -A aster-k8s-up --cacert "$PKI/ca.crt" -H "Authorization: Bearer $(cat "$K8S_STATE/admin.token")" \
		-X "$method" "$@" "$API_URL$path"
}
have_controller_manager() { [[ -x $K8S_BIN/kube-controller-manager ]]; }

# --- 2. host record (before the first change) ----------------------------------------------------
record_host() {
	[[ -f $K8S_HOST_RECORD ]] && return 0
	local cg
	for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
		[[ -d $cg ]] && k8s_die "$cg exists: another kubelet ran here and was not cleaned up (try scripts/k8s/down.sh)"
	done
	ip link show "$K8S_CNI_BRIDGE" >/dev/null 2>&1 && k8s_die "bridge $K8S_CNI_BRIDGE exists already (try scripts/k8s/down.sh)"
	local tmp="$K8S_HOST_RECORD.tmp" s d
	{
		echo "# written by scripts/k8s/up.sh at $(date -Is); read by scripts/k8s/down.sh"
		for s in "${K8S_SYSCTLS[@]}"; do
			[[ -e /proc/sys/${s//.//} ]] && echo "sysctl $s $(sysctl -n "$s")"
		done
		# Paths outside our own directories that containerd 1.6 or the kubelet create.
		for d in /run/containerd /run/netns /var/run/netns /var/log/pods /var/log/containers /var/lib/kubelet \
			/var/lib/cni /etc/kubernetes /var/run/kubernetes /opt/containerd; do
			if [[ -e $d ]]; then echo "path $d present"; else echo "path $d absent"; fi
		done
	} >"$tmp"
	iptables-save 2>/dev/null | grep '^:' | cut -d' ' -f1 >"$K8S_STATE/iptables-chains-before" || true
	mv "$tmp" "$K8S_HOST_RECORD"
	k8s_log "recorded host state in $K8S_HOST_RECORD"
}

# --- 3. PKI, tokens, kubeconfigs ------------------------------------------------------------------
new_key() { # ECDSA P-256: generated in milliseconds, accepted by every component (SA tokens: ES256)
	(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null)
}
make_cert() { # make_cert NAME SUBJECT EXTENSIONS  (signed by our CA)
	local name=$1 subj=$2 ext=$3
	[[ -s $PKI/$name.crt ]] && return 0
	new_key "$PKI/$name.key"
	openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
	printf '%s\n' "$ext" >"$PKI/$name.ext"
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
		-days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
	rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

write_kubeconfig() { # write_kubeconfig FILE USER TOKEN
	local ca
	ca=$(base64 -w0 <"$PKI/ca.crt")
	rm -f "$1"
	(umask 077 && : >"$1")
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: aster-k8s
  cluster:
    server: $API_URL
    certificate-authority-data: $ca
users:
- name: $2
  user:
    token: $3
contexts:
- name: aster-k8s
  context:
    cluster: aster-k8s
    user: $2
    namespace: default
current-context: aster-k8s
EOF
}

make_pki() {
	mkdir -p "$PKI"
	chmod 700 "$PKI"
	if [[ ! -s $PKI/ca.crt ]]; then
		new_key "$PKI/ca.key"
		openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=aster-k8s-ca" -days 3650 -sha256 -out "$PKI/ca.crt" 2>/dev/null
	fi
	local svc_ip
	svc_ip="${K8S_SERVICE_SUBNET%.*}.1"
	local server_ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth"
	local client_ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
	make_cert apiserver "/CN=kube-apiserver" "$server_ext
subjectAltName=IP:127.0.0.1,IP:$svc_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	make_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client_ext"
	make_cert apiserver-etcd-client "/CN=kube-apiserver-etcd-client" "$client_ext"
	make_cert etcd-server "/CN=localhost" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
	make_cert kubelet "/CN=localhost" "$server_ext
subjectAltName=IP:127.0.0.1,DNS:localhost"
	# A separate CA for the aggregation layer's request-header authentication (front proxy).
	if [[ ! -s $PKI/front-proxy-ca.crt ]]; then
		new_key "$PKI/front-proxy-ca.key"
		openssl req -x509 -new -key "$PKI/front-proxy-ca.key" -subj "/CN=aster-k8s-front-proxy-ca" -days 3650 -sha256 \
			-out "$PKI/front-proxy-ca.crt" 2>/dev/null
	fi
	if [[ ! -s $PKI/front-proxy-client.crt ]]; then
		new_key "$PKI/front-proxy-client.key"
		openssl req -new -key "$PKI/front-proxy-client.key" -subj "/CN=front-proxy-client" -out "$PKI/front-proxy-client.csr" 2>/dev/null
		printf '%s\n' "$client_ext" >"$PKI/front-proxy-client.ext"
		openssl x509 -req -in "$PKI/front-proxy-client.csr" -CA "$PKI/front-proxy-ca.crt" -CAkey "$PKI/front-proxy-ca.key" \
			-CAcreateserial -days 3650 -sha256 -extfile "$PKI/front-proxy-client.ext" -out "$PKI/front-proxy-client.crt" 2>/dev/null
		rm -f "$PKI/front-proxy-client.csr" "$PKI/front-proxy-client.ext"
	fi
	if [[ ! -s $PKI/sa.key ]]; then
		new_key "$PKI/sa.key"
		openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
	fi
	if [[ ! -s $PKI/tokens.csv ]]; then
		(umask 077 && : >"$PKI/tokens.csv")
		{
			echo "$(openssl rand -hex 24),aster-admin,aster-admin,\"system:masters\""
			echo "$(openssl rand -hex 24),system:node:$K8S_NODE_NAME,system:node:$K8S_NODE_NAME,\"system:nodes\""
			echo "$(openssl rand -hex 24),system:kube-controller-manager,system:kube-controller-manager"
			echo "$(openssl rand -hex 24),system:kube-scheduler,system:kube-scheduler"
		} >"$PKI/tokens.csv"
	fi
	token_of() { grep ",$1,$1" "$PKI/tokens.csv" | cut -d, -f1; }
	ADMIN_TOKEN=$(token_of aster-admin)
	write_kubeconfig "$K8S_KUBECONFIG" aster-admin "$ADMIN_TOKEN"
	(umask 077 && printf '%s\n' "$ADMIN_TOKEN" >"$K8S_STATE/admin.token")
	cp "$PKI/ca.crt" "$K8S_STATE/ca.crt"
	write_kubeconfig "$K8S_STATE/kubelet.kubeconfig" "system:node:$K8S_NODE_NAME" "$(token_of "system:node:$K8S_NODE_NAME")"
	write_kubeconfig "$K8S_STATE/controller-manager.kubeconfig" system:kube-controller-manager "$(token_of system:kube-controller-manager)"
	write_kubeconfig "$K8S_STATE/scheduler.kubeconfig" system:kube-scheduler "$(token_of system:kube-scheduler)"
}

# --- 4. containerd -------------------------------------------------------------------------------
write_containerd_config() {
	mkdir -p "$K8S_STATE/containerd" "$K8S_IMAGE_STORE" "$K8S_RUN/containerd" "$CNI_CONF_DIR" "$K8S_STATE/cni/networks"
	cat >"$K8S_STATE/containerd/config.toml" <<EOF
# Generated by scripts/k8s/up.sh: a containerd for the test Kubernetes only (not Docker's).
version = 2
root = "$K8S_IMAGE_STORE"
state = "$K8S_RUN/containerd/state"
oom_score = 0
# The "opt" plugin would create /opt/containerd.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$K8S_CONTAINERD_SOCK"

[ttrpc]
  address = ""

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_REF"
  # Root cannot lower oom_score_adj on this kind of VM; without this every Pod sandbox fails with
  # "nsexec: failed to update /proc/self/oom_score_adj: Permission denied".
  restrict_oom_score_adj = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_unprivileged_ports = false
  enable_unprivileged_icmp = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$K8S_RUN/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$CNI_CONF_DIR"
    max_conf_num = 1
EOF
	cat >"$CNI_CONF_DIR/10-aster-bridge.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "aster-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$K8S_CNI_BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "$K8S_STATE/cni/networks",
        "ranges": [[{"subnet": "$K8S_POD_SUBNET"}]]
      }
    }
  ]
}
EOF
}

import_images() {
	# (Output captured first: with pipefail, `ctr ... | grep -q` fails when grep exits early.)
	local images
	images=$("${CTR[@]}" images ls -q)
	if grep -qxF "$PAUSE_REF" <<<"$images"; then
		k8s_log "image $PAUSE_REF already imported"
	else
		"${CTR[@]}" images import "$K8S_IMAGES/pause.tar" >>"$K8S_LOGS/images.log" 2>&1 ||
			k8s_die "ctr images import $K8S_IMAGES/pause.tar failed (see $K8S_LOGS/images.log)"
		k8s_log "imported $PAUSE_REF"
	fi
	SMOKE_IMAGE=$PAUSE_REF
	if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
		k8s_log "Docker not reachable: $SA_IMAGE not imported"
		return 0
	fi
	local id
	id=$(docker image inspect -f '{{.Id}}' "$SA_IMAGE" 2>/dev/null || true)
	if [[ -z $id ]]; then
		k8s_log "$SA_IMAGE not in Docker (build it with images/sandbox/build.sh): not imported"
		return 0
	fi
	local idfile="$K8S_IMAGE_STORE/aster-sandbox-image.id" ref
	ref=$SA_IMAGE
	[[ $ref == */* ]] || ref="docker.io/library/$ref"
	if [[ "$(cat "$idfile" 2>/dev/null)" == "$id" ]] && grep -qxF "$ref" <<<"$images"; then
		k8s_log "image $SA_IMAGE ($id) already imported"
	else
		local t=$SECONDS
		docker save "$SA_IMAGE" | "${CTR[@]}" images import - >>"$K8S_LOGS/images.log" 2>&1 ||
			k8s_die "importing $SA_IMAGE from Docker failed (see $K8S_LOGS/images.log)"
		echo "$id" >"$idfile"
		k8s_log "imported $SA_IMAGE from Docker in $((SECONDS - t))s"
	fi
	SMOKE_IMAGE=$SA_IMAGE
}

# import_init_image: the aster-init image of this checkout, as the Kubernetes runtime's default
# name (aster-init:latest), so that `aster exec --runtime kubernetes` works as docs/kubernetes.md
# shows. The runtime never pulls an init image named without a registry (it would come from a
# public registry): here it is on the node or the run is refused.
import_init_image() {
	if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
		k8s_log "Docker not reachable: aster-init:latest not built (scripts/k8s/images.sh --import --init-only latest)"
		return 0
	fi
	local t=$SECONDS
	"$here/images.sh" --import --init-only latest >>"$K8S_LOGS/images.log" 2>&1 ||
		k8s_die "building and importing aster-init:latest failed (see $K8S_LOGS/images.log)"
	k8s_log "built and imported aster-init:latest from this checkout in $((SECONDS - t))s"
}

# apply_manifests: the namespaces, quota and RBAC of deploy/kubernetes (server-side apply through
# the API, no kubectl: a minimal build has none).
apply_manifests() {
	local f kind name ns path doc
	for f in "$K8S_DEPLOY/namespaces.yaml" "$K8S_DEPLOY/rbac.yaml"; do
		while IFS=$'\t' read -r kind name ns doc; do
			case $kind in
			Namespace) path=/api/v1/namespaces/$name ;;
			ResourceQuota) path=/api/v1/namespaces/$ns/resourcequotas/$name ;;
			ServiceAccount) path=/api/v1/namespaces/$ns/serviceaccounts/$name ;;
			Role) path=/apis/rbac.authorization.k8s.io/v1/namespaces/$ns/roles/$name ;;
			RoleBinding) path=/apis/rbac.authorization.k8s.io/v1/namespaces/$ns/rolebindings/$name ;;
			*) k8s_die "$f: kind $kind is not one up.sh applies" ;;
			esac
			api PATCH "$path?fieldManager=aster-k8s-up&force=true" -H 'Content-Type: application/apply-patch+yaml' \
				--data-binary "$doc" -o /dev/null || k8s_die "applying $kind $name from $f failed"
		done < <(python3 -c '
import json, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d:
        m = d["metadata"]
        print(d["kind"], m["name"], m.get("namespace", "-"), json.dumps(d), sep="\t")
' "$f")
	done
	k8s_log "applied deploy/kubernetes namespaces.yaml and rbac.yaml"
}

# --- 5. control plane ----------------------------------------------------------------------------
start_etcd() {
	mkdir -p "$K8S_STATE/etcd"
	chmod 700 "$K8S_STATE/etcd"
	local c="https://127.0.0.1:$K8S_ETCD_CLIENT_PORT" p="https://127.0.0.1:$K8S_ETCD_PEER_PORT"
	port_free_or_ours "$K8S_ETCD_CLIENT_PORT" etcd
	port_free_or_ours "$K8S_ETCD_PEER_PORT" etcd
	start_daemon etcd "$K8S_BIN/etcd" \
		--name aster --data-dir "$K8S_STATE/etcd" \
		--listen-client-urls "$c" --advertise-client-urls "$c" \
		--listen-peer-urls "$p" --initial-advertise-peer-urls "$p" \
		--initial-cluster "aster=$p" --initial-cluster-state new \
		--cert-file "$PKI/etcd-server.crt" --key-file "$PKI/etcd-server.key" \
		--client-cert-auth --trusted-ca-file "$PKI/ca.crt" \
		--peer-cert-file "$PKI/etcd-server.crt" --peer-key-file "$PKI/etcd-server.key" \
		--peer-client-cert-auth --peer-trusted-ca-file "$PKI/ca.crt" \
		--listen-metrics-urls "" --log-level warn
	wait_for "etcd health" 60 etcd curl -sf --max-time 5 --cacert "$PKI/ca.crt" \
		--cert "$PKI/apiserver-etcd-client.crt" --key "$PKI/apiserver-etcd-client.key" "$c/health"
}

start_apiserver() {
	port_free_or_ours "$K8S_API_PORT" kube-apiserver
	# Without a controller-manager nothing creates the "default" service accounts that the
	# ServiceAccount admission plugin insists on (Aster's Pods mount no token anyway).
	local admission=()
	have_controller_manager || admission=(--disable-admission-plugins=ServiceAccount)
	start_daemon kube-apiserver "$K8S_BIN/kube-apiserver" "${admission[@]}" \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$K8S_API_PORT" \
		--etcd-servers="https://127.0.0.1:$K8S_ETCD_CLIENT_PORT" --etcd-cafile="$PKI/ca.crt" \
		--etcd-certfile="$PKI/apiserver-etcd-client.crt" --etcd-keyfile="$PKI/apiserver-etcd-client.key" \
		--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
		--client-ca-file="$PKI/ca.crt" --token-auth-file="$PKI/tokens.csv" --anonymous-auth=false \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
		--service-cluster-ip-range="$K8S_SERVICE_SUBNET" --endpoint-reconciler-type=none \
		--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$PKI/ca.crt" \
		--kubelet-preferred-address-types=Hostname,InternalIP \
		--requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
		--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
		--requestheader-extra-headers-prefix=X-Remote-Extra- \
		--proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
		--cert-dir="$PKI/apiserver-generated" --profiling=false --v=1
	wait_for "kube-apiserver /readyz" 120 kube-apiserver api GET /readyz
}

start_controllers() {
	port_free_or_ours "$K8S_CM_PORT" kube-controller-manager
	port_free_or_ours "$K8S_SCHED_PORT" kube-scheduler
	local kc="$K8S_STATE/controller-manager.kubeconfig" ks="$K8S_STATE/scheduler.kubeconfig"
	have_controller_manager || k8s_log "no kube-controller-manager in $K8S_BIN (a minimal build): not started"
	have_controller_manager && start_daemon kube-controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
		--bind-address=127.0.0.1 --secure-port="$K8S_CM_PORT" --cert-dir="$PKI/controller-manager-generated" \
		--leader-elect=false --use-service-account-credentials=true --cluster-name=aster \
		--service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
		--profiling=false --v=1
	start_daemon kube-scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig="$ks" --authentication-kubeconfig="$ks" --authorization-kubeconfig="$ks" \
		--bind-address=127.0.0.1 --secure-port="$K8S_SCHED_PORT" --cert-dir="$PKI/scheduler-generated" \
		--leader-elect=false --profiling=false --v=1
}

# --- 6. kubelet ----------------------------------------------------------------------------------
start_kubelet() {
	mkdir -p "$K8S_STATE/kubelet/root" "$K8S_STATE/kubelet/pod-logs"
	# Sandbox output is written to the Pods' log files by containerd whatever Aster does; on a
	# tmpfs it never touches the host disk (down.sh unmounts everything under the state dir).
	if ! mountpoint -q "$K8S_STATE/kubelet/pod-logs"; then
		mount -t tmpfs -o "size=$K8S_POD_LOGS_SIZE,mode=0755,nosuid,nodev,noexec" aster-k8s-pod-logs "$K8S_STATE/kubelet/pod-logs"
	fi
	cat >"$K8S_STATE/kubelet/config.yaml" <<EOF
# Generated by scripts/k8s/up.sh.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $K8S_KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $K8S_KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://$K8S_CONTAINERD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
podLogsDir: $K8S_STATE/kubelet/pod-logs
# Container output always lands in these files too (Kubernetes has no "no logging" option); keep
# them small and rotated. The directory is a size-capped tmpfs (see start_kubelet).
containerLogMaxSize: 8Mi
containerLogMaxFiles: 2
# The only process cap Kubernetes has: per Pod, set on the node. Aster's default pids limit.
podPidsLimit: $K8S_POD_PIDS_LIMIT
resolvConf: /etc/resolv.conf
# Never evict or garbage-collect the imported images (there is no registry to pull them back from).
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
serializeImagePulls: false
EOF
	port_free_or_ours "$K8S_KUBELET_PORT" kubelet
	port_free_or_ours "$K8S_KUBELET_HEALTHZ_PORT" kubelet
	start_daemon kubelet "$K8S_BIN/kubelet" \
		--config="$K8S_STATE/kubelet/config.yaml" --kubeconfig="$K8S_STATE/kubelet.kubeconfig" \
		--root-dir="$K8S_STATE/kubelet/root" --cert-dir="$K8S_STATE/kubelet/pki" \
		--hostname-override="$K8S_NODE_NAME" --v=1
}

node_ready() {
	api GET "/api/v1/nodes/$K8S_NODE_NAME" 2>/dev/null | grep -q '"type":"Ready","status":"True"'
}

# --- 7. smoke Pod --------------------------------------------------------------------------------
smoke() {
	local name="aster-smoke-$$" t cmd
	if have_controller_manager; then
		wait_for "service account default/default" 60 "" api GET /api/v1/namespaces/default/serviceaccounts/default
	fi
	t=$SECONDS
	if [[ $SMOKE_IMAGE == "$PAUSE_REF" ]]; then
		cmd='"args": ["-v"]' # pause prints its version and exits 0
	else
		cmd='"command": ["/bin/sh", "-c", "echo aster-smoke-ok"]'
	fi
	api POST /api/v1/namespaces/default/pods -H 'Content-Type: application/json' -o /dev/null --data-binary @- <<JSON ||
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "$name", "labels": {"app": "aster-smoke"}},
 "spec": {"restartPolicy": "Never", "automountServiceAccountToken": false, "terminationGracePeriodSeconds": 1,
  "securityContext": {"runAsNonRoot": true, "runAsUser": 65534, "runAsGroup": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
  "containers": [{"name": "smoke", "image": "$SMOKE_IMAGE", "imagePullPolicy": "Never", $cmd,
   "resources": {"limits": {"memory": "64Mi", "cpu": "500m"}},
   "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}}}]}}
JSON
		k8s_die "creating the smoke Pod failed"
	local phase=
	while :; do
		phase=$(api GET "/api/v1/namespaces/default/pods/$name" 2>/dev/null | grep -o '"phase":"[A-Za-z]*"' | cut -d'"' -f4 || true)
		[[ $phase == Succeeded || $phase == Failed ]] && break
		if ((SECONDS - t > 120)); then
			api GET "/api/v1/namespaces/default/pods/$name" >&2 || true
			k8s_die "smoke Pod $name did not finish in 120s (phase '$phase')"
		fi
		sleep 0.2
	done
	local took=$((SECONDS - t)) out
	out=$(api GET "/api/v1/namespaces/default/pods/$name/log" 2>&1 || true)
	if [[ $phase != Succeeded ]]; then
		api GET "/api/v1/namespaces/default/pods/$name" >&2 || true
		k8s_die "smoke Pod $name ended $phase; logs: $out"
	fi
	api DELETE "/api/v1/namespaces/default/pods/$name" -o /dev/null 2>&1 || true
	SMOKE_SECONDS=$took
	k8s_log "smoke Pod ($SMOKE_IMAGE) created, scheduled, run and completed in ${took}s; logs: $out"
}

# --- main ----------------------------------------------------------------------------------------
mkdir -p "$K8S_STATE" "$K8S_RUN" "$PIDS" "$K8S_LOGS"
chmod 700 "$K8S_STATE"
exec 8>"$K8S_RUN/up.lock"
flock -n 8 || k8s_die "another up.sh is running"

ensure_packages
if [[ "${1:-}" == --packages-only ]]; then
	k8s_log "Debian packages present"
	exit 0
fi
t_build=$SECONDS
"$here/build.sh"
k8s_log "build step: $((SECONDS - t_build))s"
PAUSE_REF=$(cat "$K8S_IMAGES/pause.ref")

record_host
make_pki
write_containerd_config

t_ctrd=$SECONDS
start_daemon containerd /usr/bin/containerd --config "$K8S_STATE/containerd/config.toml"
wait_for "containerd socket" 30 containerd "${CTR[@]}" version
import_images
k8s_log "containerd ready and images imported in $((SECONDS - t_ctrd))s"

t_cp=$SECONDS
start_etcd
start_apiserver
start_controllers
k8s_log "control plane ready in $((SECONDS - t_cp))s"

kubelet_was_running=0
daemon_pid kubelet >/dev/null && kubelet_was_running=1
KUBELET_STARTED=$SECONDS
start_kubelet
wait_for "node $K8S_NODE_NAME Ready" 180 kubelet node_ready
NODE_READY_SECONDS=$((SECONDS - KUBELET_STARTED))
if ((kubelet_was_running)); then
	NODE_READY_SECONDS="- (already running)"
	k8s_log "node $K8S_NODE_NAME Ready (kubelet was already running)"
else
	k8s_log "node $K8S_NODE_NAME Ready ${NODE_READY_SECONDS}s after the kubelet start"
fi

if ! have_controller_manager; then
	# The kubelet registers its node with the not-ready taint and the node lifecycle controller
	# lifts it once the node is Ready; without a controller-manager we do.
	api PATCH "/api/v1/nodes/$K8S_NODE_NAME" -H 'Content-Type: application/merge-patch+json' \
		--data '{"spec":{"taints":null}}' -o /dev/null || k8s_die "could not lift the not-ready taint"
	k8s_log "lifted the node's not-ready taint (no controller-manager)"
fi

apply_manifests
import_init_image

SMOKE_SECONDS=-
IMAGES=$PAUSE_REF
[[ $SMOKE_IMAGE != "$PAUSE_REF" ]] && IMAGES+=", $SMOKE_IMAGE"
if [[ "${ASTER_K8S_SKIP_SMOKE:-0}" != 1 ]]; then smoke; fi

cat >&2 <<EOF

[up] cluster is up in $((SECONDS - t_total))s total (node Ready after kubelet start: ${NODE_READY_SECONDS}s, smoke Pod: ${SMOKE_SECONDS}s)
[up]   export KUBECONFIG=$K8S_KUBECONFIG
[up]   server:  $API_URL   (CA: $K8S_STATE/ca.crt, bearer token: $K8S_STATE/admin.token)
[up]   images:  $IMAGES, aster-init:latest (imagePullPolicy: Never)
[up]   namespaces aster-system, aster-sandboxes with the RBAC of deploy/kubernetes
[up]   logs:    $K8S_LOGS/*.log        stop with: scripts/k8s/down.sh
EOF
echo "$K8S_KUBECONFIG"

#!/usr/bin/env bash
# Tear down what scripts/k8s/up.sh started and undo its host changes. Idempotent: safe to run when
# nothing is up, or after a half-finished up.sh.
#
# Stops the kubelet, the control plane and etcd; kills and removes every container and Pod sandbox
# of the separate containerd, then stops it and its shims; unmounts everything under the cluster's
# directories and the Pods' network namespaces; deletes the CNI bridge and the kubepods cgroups;
# restores the sysctls recorded before the kubelet first ran (vm.overcommit_memory, kernel.panic,
# kernel.panic_on_oops, ...); removes directories that containerd or the kubelet created outside
# our own; removes $ASTER_K8S_STATE (etcd data, certificates, kubeconfig) and $ASTER_K8S_RUN.
# Kept: the build cache (/var/cache/aster/k8s), the logs (/var/log/aster-k8s), installed packages.
# Docker and Docker's containerd are never touched.
#
# Usage: scripts/k8s/down.sh [--purge]
#   --purge  also remove the imported images (containerd's root, $ASTER_K8S_STATE/containerd-root)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export K8S_LOG_TAG=down
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"
k8s_require_root

purge=0
case "${1:-}" in
--purge) purge=1 ;;
"") ;;
*) k8s_die "usage: $0 [--purge]" ;;
esac
CTR_BASE=(ctr --address "$K8S_CONTAINERD_SOCK")
problems=0
warn() {
	k8s_log "warning: $*"
	problems=$((problems + 1))
}

stop_pid() { # stop_pid PID LABEL [SIGNAL]: SIGNAL (default TERM), wait up to 10 s, then KILL
	local pid=$1 label=$2 sig=${3:-TERM} i
	kill -"$sig" "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		[[ -d /proc/$pid ]] || break
		# A zombie child of nobody we know counts as gone.
		[[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && break
		sleep 0.1
	done
	if [[ -d /proc/$pid && "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; then
		k8s_log "$label (pid $pid) ignored SIGTERM; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.2
	fi
	k8s_log "stopped $label (pid $pid)"
}

stop_daemon() {
	local pid
	if pid=$(daemon_pid "$1"); then stop_pid "$pid" "$1"; fi
	rm -f "$PIDS/$1.pid" "$PIDS/$1.exe"
}

t0=$SECONDS

# 1. The kubelet first (so it restarts nothing), then the control plane.
for d in kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_daemon "$d"; done

# 2. Containers and Pod sandboxes of our containerd (never Docker's: that one has another socket).
# If containerd died, start it briefly: it reconnects to surviving shims, and the containers must
# leave its metadata, which lives in the image store that we keep.
containerd_for_cleanup() {
	daemon_pid containerd >/dev/null && return 0
	local cfg="$K8S_STATE/containerd/config.toml"
	[[ -f $cfg && -d $K8S_IMAGE_STORE ]] || return 1
	k8s_log "containerd is not running: starting it briefly to remove leftover containers"
	mkdir -p "$PIDS" "$K8S_LOGS"
	setsid /usr/bin/containerd --config "$cfg" >>"$K8S_LOGS/containerd.log" 2>&1 </dev/null &
	echo $! >"$PIDS/containerd.pid"
	readlink -f /usr/bin/containerd >"$PIDS/containerd.exe"
	for _ in $(seq 1 100); do
		"${CTR_BASE[@]}" version >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	warn "could not start containerd to remove leftover containers"
	return 1
}
netns_paths=()
if containerd_for_cleanup && "${CTR_BASE[@]}" version >/dev/null 2>&1; then
	mapfile -t namespaces < <("${CTR_BASE[@]}" namespaces ls -q 2>/dev/null || true)
	for ns in "${namespaces[@]}"; do
		ctr_ns=("${CTR_BASE[@]}" --namespace "$ns")
		mapfile -t ids < <("${ctr_ns[@]}" containers ls -q 2>/dev/null || true)
		((${#ids[@]})) || continue
		k8s_log "removing ${#ids[@]} containers in containerd namespace $ns"
		for id in "${ids[@]}"; do
			# Pod sandboxes carry the path of their network namespace in their OCI spec.
			while IFS= read -r p; do netns_paths+=("$p"); done < <("${ctr_ns[@]}" containers info "$id" 2>/dev/null |
				grep -o '"path": *"[^"]*/netns/cni-[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/' || true)
			"${ctr_ns[@]}" tasks kill --signal SIGKILL "$id" >/dev/null 2>&1 || true
		done
		for id in "${ids[@]}"; do
			for _ in 1 2 3 4 5 6 7 8 9 10; do
				"${ctr_ns[@]}" tasks delete --force "$id" >/dev/null 2>&1 || true
				tasks=$("${ctr_ns[@]}" tasks ls -q 2>/dev/null || true)
				grep -qxF "$id" <<<"$tasks" || break
				sleep 0.2
			done
			"${ctr_ns[@]}" containers delete "$id" >/dev/null 2>&1 || warn "could not delete container $id"
		done
	done
fi
stop_daemon containerd

# Shims of our containerd that outlived it (matched by our socket path, never by name alone).
for p in /proc/[0-9]*; do
	pid=${p#/proc/}
	cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline" || true)
	[[ $cmd == *containerd-shim*"-address $K8S_CONTAINERD_SOCK"* ]] || continue
	stop_pid "$pid" "containerd shim"
done
# Containers left running by a dead shim: runc state lives under our own root.
if [[ -d $K8S_RUN/runc ]]; then
	for st in "$K8S_RUN"/runc/*/*/state.json; do
		[[ -f $st ]] || continue
		pid=$(grep -o '"init_process_pid":[0-9]*' "$st" | cut -d: -f2)
		# A container's PID 1 ignores SIGTERM unless it handles it: KILL, as ctr would.
		[[ -n $pid && -d /proc/$pid ]] && stop_pid "$pid" "orphaned container init" KILL
	done
fi

# 3. Network namespaces of our Pods, then mounts under our directories (deepest first).
if [[ -f $K8S_HOST_RECORD ]]; then
	# Pod netns created while we were up that no container info named (e.g. containerd died first).
	for p in /run/netns/cni-* /var/run/netns/cni-*; do
		[[ -e $p ]] || continue
		[[ $p -nt $K8S_HOST_RECORD ]] && netns_paths+=("$p")
	done
fi
for p in "${netns_paths[@]}"; do
	[[ -e $p ]] || continue
	umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null || true
	rm -f "$p" || warn "could not remove $p"
	k8s_log "removed network namespace $p"
done

unmount_under() {
	local prefix=$1 m n=0
	[[ -d $prefix ]] || return 0
	prefix=$(readlink -f "$prefix")
	while IFS= read -r m; do
		[[ -n $m ]] || continue
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || warn "could not unmount $m"
		n=$((n + 1))
	done < <(awk '{print $5}' /proc/self/mountinfo | sed 's/\\040/ /g' |
		awk -v p="$prefix" 'index($0, p "/") == 1 || $0 == p' | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-)
	((n == 0)) || k8s_log "unmounted $n mounts under $prefix"
}
unmount_under "$K8S_STATE"
unmount_under "$K8S_RUN"

# 4. The CNI bridge (veths went with their network namespaces).
if ip link show "$K8S_CNI_BRIDGE" >/dev/null 2>&1; then
	if ip link delete "$K8S_CNI_BRIDGE"; then
		k8s_log "deleted bridge $K8S_CNI_BRIDGE"
	else
		warn "could not delete bridge $K8S_CNI_BRIDGE"
	fi
fi

# 5. kubepods cgroups in every hierarchy (cgroup v1 controllers, the named systemd one, v2).
if pgrep -x --runstates D,R,S,T kubelet >/dev/null; then # (a zombie, just stopped, does not count)
	warn "a kubelet we did not start is running; leaving kubepods cgroups alone"
else
	removed_cg=0
	while read -r _ mnt fstype _; do
		[[ $fstype == cgroup || $fstype == cgroup2 ]] || continue
		[[ -d $mnt/kubepods ]] || continue
		removed_cg=$((removed_cg + 1))
		# Any process still inside? Then something was not stopped: report rather than loop.
		left=$(find "$mnt/kubepods" -name cgroup.procs -exec cat {} + 2>/dev/null | grep -c . || true)
		((left == 0)) || warn "$left processes still in $mnt/kubepods"
		find "$mnt/kubepods" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[[ -d $mnt/kubepods ]] && warn "could not remove $mnt/kubepods"
	done </proc/self/mounts
	((removed_cg == 0)) || k8s_log "removed kubepods cgroups in $removed_cg hierarchies"
fi

# 6. Restore what up.sh recorded before the first change.
if [[ -f $K8S_HOST_RECORD ]]; then
	while read -r kind key value; do
		case $kind in
		sysctl)
			cur=$(sysctl -n "$key" 2>/dev/null || true)
			if [[ -n $cur && "$cur" != "$value" ]]; then
				if sysctl -qw "$key=$value"; then
					k8s_log "restored $key = $value (was $cur)"
				else
					warn "could not restore $key"
				fi
			fi
			;;
		path)
			[[ $value == absent && -e $key ]] || continue
			case $key in
			/run/containerd | /run/netns | /var/run/netns)
				# Shared with other containerd instances: only remove what is empty now.
				find "$key" -depth -type d -empty -delete 2>/dev/null || true
				if [[ -e $key ]]; then warn "$key is not empty; left in place"; else k8s_log "removed $key"; fi
				;;
			*)
				rm -rf "$key" && k8s_log "removed $key (created by the cluster)"
				;;
			esac
			;;
		esac
	done < <(grep -v '^#' "$K8S_HOST_RECORD")
	# libcni's result cache, when /var/lib/cni existed already: only our network's entries.
	if grep -qx 'path /var/lib/cni present' "$K8S_HOST_RECORD"; then
		find /var/lib/cni -maxdepth 2 -name 'aster-k8s-*' -exec rm -rf {} + 2>/dev/null || true
	fi
	# iptables: the chains we might add (none with makeIPTablesUtilChains=false and ipMasq=false).
	if [[ -f $K8S_STATE/iptables-chains-before ]] && command -v iptables-save >/dev/null; then
		new=$(iptables-save 2>/dev/null | grep '^:' | cut -d' ' -f1 | grep -E '^:(KUBE-|CNI-)' |
			grep -vxF -f "$K8S_STATE/iptables-chains-before" || true)
		[[ -z $new ]] || warn "iptables chains added while up (left in place): $(tr '\n' ' ' <<<"$new")"
	fi
else
	k8s_log "no host record ($K8S_HOST_RECORD): nothing recorded to restore"
fi

# 7. Our own directories (the build cache and the logs stay). After a warning the state, with its
# host record, is kept so that a second down.sh can finish the job.
if ((problems)); then
	k8s_log "done in $((SECONDS - t0))s with $problems warnings; kept $K8S_STATE (run down.sh again once fixed)"
	exit 1
fi
for d in "$K8S_STATE" "$K8S_RUN"; do
	[[ -e $d ]] || continue
	mounts=$(findmnt -rn -o TARGET)
	if grep -q "^$d" <<<"$mounts"; then
		warn "mounts remain under $d; not removing it"
	elif [[ $d == "$K8S_STATE" && $purge == 0 && -d $K8S_IMAGE_STORE ]]; then
		# Keep the image store, minus the CRI's per-Pod directories (all Pods are gone).
		rm -rf "$K8S_IMAGE_STORE/io.containerd.grpc.v1.cri/sandboxes" "$K8S_IMAGE_STORE/io.containerd.grpc.v1.cri/containers"
		find "$d" -mindepth 1 -maxdepth 1 ! -path "$K8S_IMAGE_STORE" -exec rm -rf {} +
		k8s_log "removed $d except the image store $K8S_IMAGE_STORE ($(du -sh "$K8S_IMAGE_STORE" | cut -f1); --purge removes it)"
	else
		rm -rf "$d" && k8s_log "removed $d"
	fi
done

((problems == 0)) || exit 1
k8s_log "done in $((SECONDS - t0))s; host restored"

#!/usr/bin/env bash
# microvm-kernel.sh puts the guest kernel of `--runtime microvm` into DIR
# (default /var/lib/aster/microvm/kernel): Debian's cloud kernel (small, with
# virtio, ext4 and cgroups), extracted from its package with apt-get download
# and dpkg-deb -x, never installed. DIR gets vmlinuz (the bzImage QEMU's
# microvm machine boots), config, release (uname -r of the guest) and
# modules/ with the few modules the guest loads (the virtio transport, block
# device and serial port are modules in Debian's build). Idempotent: nothing
# is fetched when DIR already holds the kernel the package currently names.
# The initramfs is built by Aster itself (internal/sandbox/microvm), cached
# by the hash of this kernel and aster-init.
#
# Usage: scripts/microvm-kernel.sh [DIR]   (env: KERNEL_PACKAGE, default linux-image-cloud-amd64)
set -euo pipefail
dir="${1:-/var/lib/aster/microvm/kernel}"
meta="${KERNEL_PACKAGE:-linux-image-cloud-amd64}"
log() { printf 'microvm-kernel: %s\n' "$*" >&2; }

for tool in apt-get apt-cache dpkg-deb; do
	command -v "$tool" >/dev/null || { log "missing $tool (a Debian host is needed)"; exit 1; }
done
# The metapackage names the current kernel package (it moves with security updates).
pkg="$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')"
[[ -n "$pkg" ]] || pkg="$meta"
release="${pkg#linux-image-}"
if [[ -f "$dir/release" && "$(cat "$dir/release")" == "$release" && -f "$dir/vmlinuz" ]]; then
	log "guest kernel $release present in $dir"
	exit 0
fi
work="$(mktemp -d /var/tmp/aster-kernel.XXXXXX)"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
log "fetching $pkg"
(cd "$work" && apt-get download "$pkg" >/dev/null 2>"$work/apt.err") || { cat "$work/apt.err" >&2; exit 1; }
dpkg-deb -x "$work"/*.deb "$work/x"
mods="$work/x/lib/modules/$release/kernel"
mkdir -p "$work/out/modules"
cp "$work/x/boot/vmlinuz-$release" "$work/out/vmlinuz"
cp "$work/x/boot/config-$release" "$work/out/config"
for m in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_mmio drivers/block/virtio_blk drivers/char/virtio_console; do
	[[ -f "$mods/$m.ko" ]] && cp "$mods/$m.ko" "$work/out/modules/"
done
echo "$release" >"$work/out/release"
chmod -R a+rX "$work/out"
mkdir -p "$(dirname "$dir")"
rm -rf "$dir.old"
[[ -e "$dir" ]] && mv "$dir" "$dir.old"
mv "$work/out" "$dir"
rm -rf "$dir.old"
log "guest kernel $release in $dir"

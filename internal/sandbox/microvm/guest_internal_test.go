package microvm

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// readCpio parses a newc archive: name -> (mode, data, rdev major:minor).
func readCpio(t *testing.T, b []byte) map[string]struct {
	mode         int64
	data         []byte
	major, minor int64
} {
	t.Helper()
	out := map[string]struct {
		mode         int64
		data         []byte
		major, minor int64
	}{}
	pad := func(n int) int { return (n + 3) &^ 3 }
	for off := 0; ; {
		if len(b)-off < 110 || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		field := func(i int) int64 {
			v, err := strconv.ParseInt(string(b[off+6+8*i:off+14+8*i]), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		mode, size, major, minor, nameSize := field(1), int(field(6)), field(9), field(10), int(field(11))
		name := string(b[off+110 : off+110+nameSize-1])
		dataOff := pad(off + 110 + nameSize)
		if name == "TRAILER!!!" {
			return out
		}
		out[name] = struct {
			mode         int64
			data         []byte
			major, minor int64
		}{mode, b[dataOff : dataOff+size], major, minor}
		off = pad(dataOff + size)
	}
}

func TestInitramfsLayout(t *testing.T) {
	dir := t.TempDir()
	initBin := filepath.Join(dir, "aster-init")
	mod := filepath.Join(dir, "virtio_blk.ko")
	os.WriteFile(initBin, []byte("INIT-BINARY"), 0o755)
	os.WriteFile(mod, []byte("MODULE"), 0o644)
	dst := filepath.Join(dir, "initrd.img")
	if err := buildInitramfs(dst, initBin, []string{mod}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw)%4 != 0 {
		t.Errorf("archive length %d is not padded to 4", len(raw))
	}
	got := readCpio(t, raw)
	if e := got["init"]; string(e.data) != "INIT-BINARY" || e.mode != cpioReg|0o755 {
		t.Errorf("init: mode %o data %q", e.mode, e.data)
	}
	if e := got["lib/modules/virtio_blk.ko"]; string(e.data) != "MODULE" {
		t.Errorf("module: %q", e.data)
	}
	if e := got["dev/console"]; e.mode != cpioChar|0o600 || e.major != 5 || e.minor != 1 {
		t.Errorf("dev/console: mode %o rdev %d:%d", e.mode, e.major, e.minor)
	}
	for _, d := range []string{"dev", "proc", "sys", "newroot", "lib/modules"} {
		if got[d].mode&cpioDir == 0 {
			t.Errorf("%s is not a directory", d)
		}
	}
}

// TestQEMUArgsHaveNoWayOut: the VM is given no network device, QEMU's
// seccomp sandbox with every option denied, the disk read-only, and the
// limits that were asked for.
func TestQEMUArgsHaveNoWayOut(t *testing.T) {
	r := &Runtime{guest: guest{Kernel: "/k", Initrd: "/i"}, tscKHz: 2_100_000}
	l := sandbox.Limits{MemoryBytes: 256 << 20, MilliCPUs: 1500, Pids: 64, WorkdirBytes: 32 << 20, TmpBytes: 16 << 20}
	args := r.qemuArgs(AccelTCG, "r-1", l.MemoryBytes+GuestOverheadBytes, l, false)
	joined := strings.Join(args, " ")
	if strings.Contains(joined, "-hold") {
		t.Errorf("a one-shot VM's init is asked to hold it:\n%s", joined)
	}
	// -no-reboot with panic=-1 and reboot=t: init's exit ends the VM (a
	// triple fault is a reset QEMU turns into its exit; the kernel's other
	// restart methods can fall through to a jump into the firmware, which
	// boots the guest again).
	for _, want := range []string{"-nodefaults", "-nic none", "-no-reboot", "panic=-1 reboot=t",
		"-sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
		"readonly=on", "-m 384M", "-smp 2", "-accel tcg,tb-size=64", "tsc_early_khz=2100000",
		"-- -vm -memory 268435456 -pids 64 -work 33554432 -tmp 16777216",
		"-kernel /proc/self/fd/4", "-initrd /proc/self/fd/5", "socket,id=port,fd=6", "-name aster-r-1"} {
		if !strings.Contains(joined, want) {
			t.Errorf("qemu args lack %q:\n%s", want, joined)
		}
	}
	for _, bad := range []string{"-netdev", "virtio-net", "vhost", "-monitor stdio", "-runas", "path="} {
		if strings.Contains(joined, bad) {
			t.Errorf("qemu args hold %q", bad)
		}
	}
	// A session's VM: the same line, its init holding the VM.
	held := strings.Join(r.qemuArgs(AccelTCG, "r-1", l.MemoryBytes+GuestOverheadBytes, l, true), " ")
	if held != strings.Replace(joined, "-linger 10s", "-linger 10s -hold", 1) {
		t.Errorf("a session VM's line differs from a one-shot VM's by more than -hold:\n%s\n%s", held, joined)
	}
	kvm := r.qemuArgs(AccelKVM, "r-1", 1<<30, l, false)
	if !slices.Contains(kvm, "kvm") || strings.Contains(strings.Join(kvm, " "), "tsc_early_khz") {
		t.Errorf("kvm args: %v", kvm)
	}
	if !bytes.Contains([]byte(strings.Join(kvm, " ")), []byte("-cpu host")) {
		t.Errorf("kvm args without -cpu host")
	}
}

// A new image disk removes the disks of digests no VM booted for
// runtimekit.CacheUnusedFor, and keeps the recent ones.
func TestDiskBuildPrunesOldDisks(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 not installed (e2fsprogs)")
	}
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "hello"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &disks{dir: t.TempDir()}
	old := time.Now().Add(-2 * runtimekit.CacheUnusedFor)
	stale, recent := d.path("sha256:old"), d.path("sha256:recent")
	for _, p := range []string{stale, recent} {
		if err := os.WriteFile(p, []byte("disk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	p, err := d.ensure(t.Context(), "sha256:new", tree)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the new disk: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the old digest's disk is still there (%v)", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("a recently used disk was removed: %v", err)
	}
}

// firstLine keeps QEMU's first line, at most 300 bytes, never half a character.
func TestFirstLine(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	for in, want := range map[string]string{
		"kvm: no\nsecond": "kvm: no",
		long + "\nnext":   strings.Repeat("é", 150),
		"x" + long:        "x" + strings.Repeat("é", 149),
	} {
		if got := firstLine(in); got != want {
			t.Errorf("firstLine(%.20q…) = %d bytes %.20q…, want %d bytes", in, len(got), got, len(want))
		}
	}
}

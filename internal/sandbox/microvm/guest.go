package microvm

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// The guest: a kernel extracted from a Debian package by
// scripts/microvm-kernel.sh (`make setup` runs it) into KernelDir, and an
// initramfs built here whose /init is aster-init, beside the modules the
// guest needs that Debian's kernel builds as modules. Both are cached under
// CacheDir/guest/<hash of their inputs>, so a new aster-init or kernel gives
// a new guest and an unchanged one is reused.

// kernelModules are the modules the guest loads (cmd/aster-init/vm.go loads
// them in this order): virtio-mmio, the root block device, virtio-serial.
var kernelModules = []string{"virtio_ring", "virtio", "virtio_mmio", "virtio_blk", "virtio_console"}

// guestFormat is the version of what buildInitramfs writes; it is part of
// the hash so a change of layout makes a new guest.
const guestFormat = "aster-microvm-guest-1"

// guest is a kernel and initramfs ready to boot.
type guest struct {
	Kernel  string // bzImage
	Initrd  string // gzip-compressed newc cpio
	Release string // the guest kernel's release (uname -r)
	Hash    string
}

// kernelFiles are what scripts/microvm-kernel.sh leaves in a kernel dir.
func kernelFiles(dir string) (vmlinuz, release string, modules []string, err error) {
	vmlinuz = filepath.Join(dir, "vmlinuz")
	if _, err := os.Stat(vmlinuz); err != nil {
		return "", "", nil, fmt.Errorf("guest kernel: %w (run `make setup`, or scripts/microvm-kernel.sh %s)", err, dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "release"))
	if err != nil {
		return "", "", nil, fmt.Errorf("guest kernel: %w", err)
	}
	release = strings.TrimSpace(string(b))
	for _, m := range kernelModules {
		p := filepath.Join(dir, "modules", m+".ko")
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // built in
			}
			return "", "", nil, err
		}
		modules = append(modules, p)
	}
	return vmlinuz, release, modules, nil
}

// ensureGuest returns the guest for this kernel and aster-init, building its
// initramfs when this combination was never built.
func ensureGuest(cacheDir, kernelDir, initPath string) (guest, error) {
	vmlinuz, release, modules, err := kernelFiles(kernelDir)
	if err != nil {
		return guest{}, err
	}
	h := sha256.New()
	io.WriteString(h, guestFormat+"\n")
	for _, p := range append([]string{vmlinuz, initPath}, modules...) {
		if err := hashFile(h, p); err != nil {
			return guest{}, fmt.Errorf("guest inputs: %w", err)
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	dir := filepath.Join(cacheDir, "guest", sum)
	g := guest{Kernel: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initrd.img"), Release: release, Hash: sum}
	if _, err := os.Stat(g.Initrd); err == nil {
		runtimekit.MarkUsed(dir) // in use: see the pruning below
		return g, nil
	}
	// QEMU, as the sandbox's own uid, reopens these through /proc/self/fd,
	// which checks the file's own mode: they are readable by all (a kernel
	// and aster-init are no secret); the directories stay root's.
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return guest{}, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".build-")
	if err != nil {
		return guest{}, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return guest{}, err
	}
	if err := copyFile(vmlinuz, filepath.Join(tmp, "vmlinuz"), 0o644); err != nil {
		return guest{}, err
	}
	if err := buildInitramfs(filepath.Join(tmp, "initrd.img"), initPath, modules); err != nil {
		return guest{}, fmt.Errorf("build initramfs: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(g.Initrd); serr != nil {
			return guest{}, err
		}
	}
	// Builds no runtime has started with for guestUnusedFor go.
	runtimekit.PruneUnused(filepath.Dir(dir), guestUnusedFor, func(name string) bool { return name == sum })
	return g, nil
}

// guestUnusedFor is how long a guest build no runtime has started with is
// kept (another Aster process with an older aster-init may still boot it).
const guestUnusedFor = 7 * 24 * time.Hour

func hashFile(h io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(h, "%s\n", filepath.Base(p))
	_, err = io.Copy(h, f)
	return err
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// buildInitramfs writes the initramfs: /init (aster-init), /lib/modules/*.ko
// and the directories the boot stage mounts on.
func buildInitramfs(dst, initPath string, modules []string) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	zw, err := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	if err != nil {
		return err
	}
	cw := &cpioWriter{w: zw, ino: 1}
	for _, d := range []string{"dev", "proc", "sys", "lib", "lib/modules", "newroot"} {
		if err := cw.dir(d, 0o755); err != nil {
			return err
		}
	}
	if err := cw.charDev("dev/console", 0o600, 5, 1); err != nil {
		return err
	}
	if err := cw.fileFrom("init", initPath, 0o755); err != nil {
		return err
	}
	for _, m := range modules {
		if err := cw.fileFrom("lib/modules/"+filepath.Base(m), m, 0o644); err != nil {
			return err
		}
	}
	if err := cw.trailer(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// cpioWriter writes the "newc" cpio format the kernel unpacks an initramfs
// from: a 110-byte ASCII header per entry, name and data each padded to 4.
type cpioWriter struct {
	w   io.Writer
	ino int
}

const (
	cpioDir  = 0o040000
	cpioReg  = 0o100000
	cpioChar = 0o020000
)

func (c *cpioWriter) header(name string, mode, size int, major, minor int) error {
	c.ino++
	nlink := 1
	if mode&cpioDir != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, major, minor, len(name)+1, 0)
	if _, err := io.WriteString(c.w, hdr+name+"\x00"); err != nil {
		return err
	}
	return c.pad(len(hdr) + len(name) + 1)
}

func (c *cpioWriter) pad(n int) error {
	if r := n % 4; r != 0 {
		_, err := c.w.Write(make([]byte, 4-r))
		return err
	}
	return nil
}

func (c *cpioWriter) dir(name string, perm int) error {
	return c.header(name, cpioDir|perm, 0, 0, 0)
}

func (c *cpioWriter) charDev(name string, perm, major, minor int) error {
	return c.header(name, cpioChar|perm, 0, major, minor)
}

func (c *cpioWriter) fileFrom(name, src string, perm int) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := c.header(name, cpioReg|perm, len(b), 0, 0); err != nil {
		return err
	}
	if _, err := c.w.Write(b); err != nil {
		return err
	}
	return c.pad(len(b))
}

func (c *cpioWriter) trailer() error {
	return c.header("TRAILER!!!", 0, 0, 0, 0)
}

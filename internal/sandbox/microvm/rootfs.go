package microvm

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// The sandbox image reaches the guest as a read-only virtio block device
// holding an ext4 filesystem (ext4 is built into Debian's kernel; erofs and
// squashfs are modules): made once per image digest with `mkfs.ext4 -d`
// from the oci runtime's exported tree (setuid bits already stripped), kept
// under CacheDir/disks/<digest>.ext4, and opened read-only by every VM.

// diskFormat names what makeDisk writes; a change makes new disks.
const diskFormat = "ext4-v1"

type disks struct {
	dir string
	mu  sync.Mutex // one build at a time (a burst of cold starts waits for the first)
}

func (d *disks) path(digest string) string {
	name := strings.NewReplacer(":", "-", "/", "-").Replace(digest)
	return filepath.Join(d.dir, name+"."+diskFormat+".img")
}

// ensure returns the disk of an image tree, building it when missing.
func (d *disks) ensure(ctx context.Context, digest, tree string) (string, error) {
	p := d.path(digest)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return "", err
	}
	bytesUsed, files, err := treeSize(tree)
	if err != nil {
		return "", fmt.Errorf("image disk: %w", err)
	}
	// Room for ext4's own metadata and block rounding; the filesystem is
	// mounted read-only, so no free space is needed beyond that.
	size := bytesUsed + bytesUsed/5 + 64<<20
	inodes := files + files/4 + 1024
	tmp := p + ".tmp"
	_ = os.Remove(tmp)
	cmd := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-t", "ext4", "-O", "^has_journal", "-m", "0",
		"-N", strconv.FormatInt(inodes, 10), "-L", "aster-root", "-E", "lazy_itable_init=0",
		"-d", tree, tmp, strconv.FormatInt(size/1024, 10)+"k")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("mkfs.ext4 (install e2fsprogs): %v: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", err
	}
	// Disks of digests no VM booted for a while (an image rebuilt since) go.
	keep := filepath.Base(p)
	runtimekit.PruneUnused(d.dir, runtimekit.CacheUnusedFor, func(name string) bool { return name == keep })
	return p, nil
}

// treeSize adds up a tree's regular-file bytes (in 4 KiB blocks) and entries.
func treeSize(root string) (bytesUsed, entries int64, err error) {
	err = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		entries++
		if de.Type().IsRegular() {
			fi, err := de.Info()
			if err != nil {
				return err
			}
			bytesUsed += (fi.Size() + 4095) &^ 4095
		} else {
			bytesUsed += 4096
		}
		return nil
	})
	return bytesUsed, entries, err
}

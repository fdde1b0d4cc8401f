package oci

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// rootfsDir holds the exported trees, one per digest. Its name is the version
// of what extraction writes: a tree made by an older version (which kept the
// image's setuid and setgid bits) lies under another name and is never used.
const rootfsDir = "rootfs-v2"

// legacyRootfsDir is where versions before rootfsDir kept their trees.
const legacyRootfsDir = "rootfs"

// secureCache makes the image cache private to its owner (SECURITY.md M3):
// the directory, its tree directories and its index are readable by no one
// else, so no host user reaches a root-owned binary of an image through it.
// Trees an older version left are kept — a sandbox of that version may still
// run on one — but lose their setuid and setgid bits. It returns how many
// files it stripped.
func secureCache(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	// Never chmod through a link, nor a directory someone else could have
	// planted a tree in.
	if err := ownedPrivateDir(dir); err != nil {
		return 0, err
	}
	for _, p := range []string{dir, filepath.Join(dir, rootfsDir), filepath.Join(dir, legacyRootfsDir), filepath.Join(dir, indexFile)} {
		mode := fs.FileMode(0o700)
		if filepath.Base(p) == indexFile {
			mode = 0o600
		}
		if err := os.Chmod(p, mode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
	}
	stripped := 0
	legacy := filepath.Join(dir, legacyRootfsDir)
	err := filepath.WalkDir(legacy, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == legacy && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // WalkDir does not follow links, and os.Chmod would
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if m := fi.Mode(); m&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			if err := os.Chmod(p, m.Perm()|m&fs.ModeSticky); err != nil {
				return err
			}
			stripped++
		}
		return nil
	})
	if err != nil {
		return stripped, fmt.Errorf("strip setuid bits from %s: %w", legacy, err)
	}
	return stripped, nil
}

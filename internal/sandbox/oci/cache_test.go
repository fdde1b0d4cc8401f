package oci_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
)

// TestHostCachesArePrivate is SECURITY.md M3 on the real image: once the
// runtime has exported it, the cache, its trees' parent and the state
// directories are 0700, and no file of the exported tree is setuid or setgid
// (the image's own passwd, su, mount... are).
func TestHostCachesArePrivate(t *testing.T) {
	opts := ocitest.Options(t)
	ocitest.New(t, opts)
	mode := func(p string) fs.FileMode {
		t.Helper()
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	}
	trees := filepath.Join(opts.CacheDir, "rootfs-v2")
	for _, d := range []string{opts.CacheDir, trees, opts.StateDir, filepath.Join(opts.StateDir, "runs")} {
		if m := mode(d); m != 0o700 {
			t.Errorf("%s: mode %v, want 0700", d, m)
		}
	}
	entries, err := os.ReadDir(trees)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		err := filepath.WalkDir(filepath.Join(trees, e.Name()), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			files++
			if m := mode(p); m&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Errorf("%s: mode %v in the host cache", p, m)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 1000 {
		t.Fatalf("walked %d entries: the exported image is not where the test looks", files)
	}
}

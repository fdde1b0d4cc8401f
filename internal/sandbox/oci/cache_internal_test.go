package oci

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// setuidFiles walks a tree without following links and returns every entry
// with a setuid or setgid bit.
func setuidFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func perm(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// TestExtractRootfsStripsSetuid: an image full of setuid and setgid entries
// (files, a hard link to one, directories) gives a tree with none, the other
// permission bits and the sticky bit as the image has them.
func TestExtractRootfsStripsSetuid(t *testing.T) {
	dir := t.TempDir()
	archive := tarOf(t,
		entry{h: tar.Header{Typeflag: tar.TypeDir, Name: "usr/bin/", Mode: 0o755}},
		entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/su", Mode: 0o4755}, body: "su"},
		entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/wall", Mode: 0o2755}, body: "wall"},
		entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/both", Mode: 0o6711}, body: "both"},
		entry{h: tar.Header{Typeflag: tar.TypeLink, Name: "usr/bin/su2", Linkname: "usr/bin/su"}},
		entry{h: tar.Header{Typeflag: tar.TypeDir, Name: "var/mail/", Mode: 0o2775}},
		entry{h: tar.Header{Typeflag: tar.TypeDir, Name: "var/tmp/", Mode: 0o1777}},
	)
	if _, err := extractRootfs(bytes.NewReader(archive), dir); err != nil {
		t.Fatal(err)
	}
	if bad := setuidFiles(t, dir); len(bad) != 0 {
		t.Fatalf("setuid/setgid entries left: %v", bad)
	}
	for p, want := range map[string]fs.FileMode{
		"usr/bin/su": 0o755, "usr/bin/wall": 0o755, "usr/bin/both": 0o711, "usr/bin/su2": 0o755,
		"var/mail": 0o775, "var/tmp": 0o777 | fs.ModeSticky,
	} {
		if got := perm(t, filepath.Join(dir, p)); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}

// TestSecureCacheFixesAnOlderCache: a cache as an older version left it
// (0755, a tree under the old name keeping setuid files, a world-readable
// index) is made private, and the old tree loses its setuid bits — without
// following a link out of it.
func TestSecureCacheFixesAnOlderCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	tree := filepath.Join(dir, legacyRootfsDir, "sha256-old")
	for _, d := range []string{filepath.Join(tree, "usr/bin"), filepath.Join(tree, "var/mail")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "outside-setuid")
	for p, m := range map[string]fs.FileMode{
		filepath.Join(tree, "usr/bin/su"):    0o755 | fs.ModeSetuid,
		filepath.Join(tree, "usr/bin/wall"):  0o755 | fs.ModeSetgid,
		filepath.Join(tree, "usr/bin/plain"): 0o755,
		outside:                              0o755 | fs.ModeSetuid,
		filepath.Join(dir, indexFile):        0o644,
	} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(tree, "var/mail"), 0o775|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(tree, "usr/bin/link")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, legacyRootfsDir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	n, err := secureCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("stripped %d entries, want 3", n)
	}
	if bad := setuidFiles(t, tree); len(bad) != 0 {
		t.Errorf("setuid/setgid entries left: %v", bad)
	}
	for p, want := range map[string]fs.FileMode{
		dir:                                  0o700,
		filepath.Join(dir, legacyRootfsDir):  0o700,
		filepath.Join(dir, indexFile):        0o600,
		filepath.Join(tree, "usr/bin/su"):    0o755,
		filepath.Join(tree, "usr/bin/plain"): 0o755,
		filepath.Join(tree, "var/mail"):      0o775,
		outside:                              0o755 | fs.ModeSetuid, // never followed
	} {
		if got := perm(t, p); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}

	// A fresh cache is made private too, and an export lands under the new
	// name: a private parent, a traversable tree root, no setuid entry.
	fresh := filepath.Join(t.TempDir(), "fresh")
	if _, err := secureCache(fresh); err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{archive: tarOf(t, entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/su", Mode: 0o4755}, body: "su"})}
	root, err := newImageCache(fresh, src).rootfs(t.Context(), "img:1")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(root) != filepath.Join(fresh, rootfsDir) {
		t.Errorf("tree at %s, want under %s", root, rootfsDir)
	}
	for p, want := range map[string]fs.FileMode{
		fresh:                           0o700,
		filepath.Join(fresh, rootfsDir): 0o700,
		filepath.Join(fresh, indexFile): 0o600,
		root:                            0o755,
	} {
		if got := perm(t, p); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
	if bad := setuidFiles(t, root); len(bad) != 0 {
		t.Errorf("setuid/setgid entries in a fresh export: %v", bad)
	}
}

// TestSecureCacheRefusesAForeignDirectory: a cache directory that others can
// write to (a tree could have been planted) or that is a link is refused.
func TestSecureCacheRefusesAForeignDirectory(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := secureCache(open); err == nil {
		t.Error("a world-writable cache directory was accepted")
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if _, err := secureCache(link); err == nil {
		t.Error("a cache directory that is a link was accepted")
	}
}

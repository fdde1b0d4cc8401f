package runtimekit

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestPruneUnused(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-3 * CacheUnusedFor)
	mk := func(name string, dirEntry bool, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if dirEntry {
			if err := os.MkdirAll(filepath.Join(p, "usr", "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte("disk"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk("sha256-old", true, old)
	staleDisk := mk("sha256-old.ext4-v1.img", false, old)
	kept := mk("sha256-current", true, old)     // named by the index
	building := mk(".export-123", true, old)    // a build in progress
	used := mk("sha256-used", true, old)        // marked used just now
	fresh := mk("sha256-new", true, time.Now()) // just made
	MarkUsed(used)

	removed := PruneUnused(dir, CacheUnusedFor, func(name string) bool { return name == "sha256-current" })
	slices.Sort(removed)
	if want := []string{"sha256-old", "sha256-old.ext4-v1.img"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, p := range []string{stale, staleDisk} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", filepath.Base(p), err)
		}
	}
	for _, p := range []string{kept, building, used, fresh} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	if got := PruneUnused(filepath.Join(dir, "missing"), CacheUnusedFor, nil); got != nil {
		t.Errorf("a missing directory: removed %v", got)
	}
}

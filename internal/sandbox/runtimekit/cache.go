package runtimekit

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CacheUnusedFor is how long a runtime's cache keeps an entry nothing has
// used (an image tree or disk of a digest no tag names any more, a guest
// built for an older aster-init): longer than any run may last, so that no
// running sandbox loses the files it was started on.
const CacheUnusedFor = 48 * time.Hour

// MarkUsed records that a cache entry (a file or a directory) is in use now,
// by its modification time, which PruneUnused reads. It is best-effort: an
// entry that cannot be marked is only pruned sooner.
func MarkUsed(path string) {
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}

// PruneUnused removes the entries of dir that keep does not hold on to and
// that were not marked used (MarkUsed) for unusedFor. Hidden entries (builds
// in progress) are left alone. A runtime calls it after it adds an entry, so
// a cache grows by what is in use, not by every image ever rebuilt. It
// returns the names it removed.
func PruneUnused(dir string, unusedFor time.Duration, keep func(name string) bool) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || (keep != nil && keep(name)) {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) <= unusedFor {
			continue
		}
		if os.RemoveAll(filepath.Join(dir, name)) == nil {
			removed = append(removed, name)
		}
	}
	return removed
}

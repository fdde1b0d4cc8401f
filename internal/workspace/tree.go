package workspace

import (
	"archive/tar"
	"hash/maphash"
	"strings"
)

// tree is Filter's model of the tree an archive builds, entry by entry, as an
// extractor would build it: the latest type of every name an entry declared,
// and the set of names that are symlinks.
//
// Filter never lets a symlink be redeclared as anything but a symlink, so a
// name that is a symlink stays one. "Does this entry pass through a symlink?"
// is then "is a proper prefix of its name in the symlink set?", and that is
// answered in time linear in the name: the prefixes are hashed incrementally,
// one component at a time, with a seeded maphash (collision-resistant against
// chosen input), and only a hash hit is confirmed by an exact lookup. Walking
// the parents with path.Dir and hashing each parent anew, as before, cost
// O(depth × length) per entry: close to a minute of CPU for 11 MB of entries
// 2,000 levels deep (BenchmarkFilterDeep -reference).
type tree struct {
	kind     map[string]byte     // cleaned name → latest typeflag
	symlinks map[uint64]struct{} // maphash of every symlink name
	seed     maphash.Seed
	h        maphash.Hash
}

func newTree() *tree {
	n := &tree{kind: make(map[string]byte), symlinks: make(map[uint64]struct{}), seed: maphash.MakeSeed()}
	n.h.SetSeed(n.seed)
	return n
}

// add records that the entry name (cleaned, without a trailing slash) now has
// type typ.
func (n *tree) add(name string, typ byte) {
	n.kind[name] = typ
	if typ == tar.TypeSymlink {
		n.symlinks[maphash.String(n.seed, name)] = struct{}{}
	}
}

func (n *tree) kindOf(name string) byte { return n.kind[name] }

// symlinkParent returns the shortest proper prefix of name that is a symlink,
// or "" when none is. name is cleaned: no empty, "." or ".." component.
func (n *tree) symlinkParent(name string) string {
	if len(n.symlinks) == 0 {
		return ""
	}
	n.h.Reset()
	start := 0
	for {
		i := strings.IndexByte(name[start:], '/')
		if i < 0 {
			return ""
		}
		end := start + i
		n.h.WriteString(name[start:end])
		if _, hit := n.symlinks[n.h.Sum64()]; hit && n.kind[name[:end]] == tar.TypeSymlink {
			return name[:end]
		}
		n.h.WriteByte('/')
		start = end + 1
	}
}

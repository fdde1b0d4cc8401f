package workspace

import (
	"archive/tar"
	"io"
	"path"
)

// mainFilter is Filter with the symlink check it had before the checks were
// made linear (commit e9769b2): every entry's parents walked with path.Dir
// and each looked up anew, O(depth × length) per entry. It is kept only so
// that the benchmarks can measure both side by side (go test -bench Filter
// -reference). Do not use it for anything else.
func mainFilter(r io.Reader, w io.Writer, caps Caps) (Stats, error) {
	return filter(r, w, caps, walkNames{})
}

// walkNames is an entrySet as a plain map: cleaned name → latest typeflag.
type walkNames map[string]byte

func (m walkNames) add(name string, typ byte) { m[name] = typ }

func (m walkNames) kindOf(name string) byte { return m[name] }

func (m walkNames) symlinkParent(name string) string {
	found := ""
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if m[dir] == tar.TypeSymlink {
			found = dir
		}
	}
	return found
}

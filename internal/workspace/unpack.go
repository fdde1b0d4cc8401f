package workspace

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Unpack extracts a tar stream into root. It runs inside the sandbox (aster-init)
// and is the second line of defence after Filter: every operation goes through
// os.Root, so neither a "../" name nor a symlink planted by an earlier entry can
// make a later entry land outside root. Ownership is the caller's; modes keep
// only permission bits.
//
// Cost: os.Root resolves a name one component at a time, a system call per
// level, so the parent directory of the latest entry is kept open and an entry
// in the same directory as the one before it (the order of any tar made by a
// directory walk) costs a few system calls however deep it is; an entry in
// another directory costs a few per level of its path, still linear in the size
// of the archive.
func Unpack(r io.Reader, root *os.Root, caps Caps) (Stats, error) {
	caps = caps.withDefaults()
	tr := tar.NewReader(r)
	dirs := &dirCache{root: root}
	defer dirs.drop()
	var st Stats
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("%w: read archive: %v", ErrUnsafe, err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		// Counted before any work on the entry, like Filter does.
		st.Files++
		if st.Files > caps.MaxFiles {
			return st, fmt.Errorf("%w: more than %d entries", ErrTooLarge, caps.MaxFiles)
		}
		if IsSparse(hdr) {
			return st, errSparse(hdr)
		}
		name, err := CleanName(hdr.Name)
		if err != nil {
			return st, err
		}
		if name == "." {
			st.Files--
			continue
		}
		if err := unpackEntry(tr, hdr, name, dirs, caps, &st); err != nil {
			return st, err
		}
	}
}

func unpackEntry(tr *tar.Reader, hdr *tar.Header, name string, dirs *dirCache, caps Caps, st *Stats) error {
	parent, err := dirs.open(path.Dir(name))
	if err != nil {
		return err
	}
	base := path.Base(name)
	mode := fs.FileMode(hdr.Mode) & fs.ModePerm
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := parent.MkdirAll(base, mode|0o700); err != nil {
			return fmt.Errorf("create %s: %w", Quote(name), err)
		}
	case tar.TypeReg:
		if hdr.Size > caps.MaxBytes-st.Bytes {
			return fmt.Errorf("%w: more than %d bytes of files", ErrTooLarge, caps.MaxBytes)
		}
		dirs.removeExisting(parent, base, name)
		f, err := parent.OpenFile(base, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode|0o600)
		if err != nil {
			return fmt.Errorf("create %s: %w", Quote(name), err)
		}
		n, err := io.Copy(f, io.LimitReader(tr, hdr.Size))
		st.Bytes += n
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", Quote(name), err)
		}
	case tar.TypeSymlink:
		dirs.removeExisting(parent, base, name)
		dirs.changed(name)
		if err := parent.Symlink(hdr.Linkname, base); err != nil {
			return fmt.Errorf("symlink %s: %w", Quote(name), err)
		}
	case tar.TypeLink:
		target, err := CleanName(hdr.Linkname)
		if err != nil {
			return fmt.Errorf("%w: hard link %s points outside the workspace", ErrUnsafe, Quote(name))
		}
		dirs.removeExisting(parent, base, name)
		if err := dirs.root.Link(target, name); err != nil {
			return fmt.Errorf("link %s: %w", Quote(name), err)
		}
	default:
		return fmt.Errorf("%w: entry %s of unsupported type %q", ErrUnsafe, Quote(name), hdr.Typeflag)
	}
	return nil
}

// dirCache holds the directory of the latest entry open as an os.Root of its
// own. What it holds is exactly what resolving the name from the root again
// would give: only creating or removing a symlink changes where an existing
// path leads (directories are never removed or renamed here), and a symlink
// created or removed on the way to the cached directory drops it. One below it
// (in it, at parent/base) changes nothing about the directory itself.
type dirCache struct {
	root *os.Root
	name string   // cleaned, relative to root; "" when dir is nil
	dir  *os.Root // nil when nothing is cached
}

// open returns the directory name (cleaned) of root, created if missing.
func (c *dirCache) open(name string) (*os.Root, error) {
	if name == "." {
		return c.root, nil
	}
	if c.dir != nil && c.name == name {
		return c.dir, nil
	}
	c.drop()
	if err := c.root.MkdirAll(name, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", Quote(name), err)
	}
	dir, err := c.root.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", Quote(name), err)
	}
	c.dir, c.name = dir, name
	return dir, nil
}

// changed drops the cached directory if name is it or one of its parents.
func (c *dirCache) changed(name string) {
	if c.dir != nil && (c.name == name || strings.HasPrefix(c.name, name+"/")) {
		c.drop()
	}
}

func (c *dirCache) drop() {
	if c.dir != nil {
		c.dir.Close()
		c.dir, c.name = nil, ""
	}
}

// removeExisting makes room for an entry that replaces an earlier one of the
// same name (tar semantics: the last one wins). Directories are left alone.
// parent/base is name.
func (c *dirCache) removeExisting(parent *os.Root, base, name string) {
	fi, err := parent.Lstat(base)
	if err != nil || fi.IsDir() {
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		c.changed(name)
	}
	_ = parent.Remove(base)
}

package oci

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/workspace"
)

// extractStats counts what an extraction wrote and what it left out.
type extractStats struct {
	Files, Dirs, Links int
	Skipped            int // device nodes, FIFOs, sockets: the runtime provides /dev
	Bytes              int64
}

// extractRootfs unpacks an image's flattened filesystem (a `docker export`
// stream) into dir. The image is on the operator's allowlist, but the archive
// is still treated as data: every path is resolved through an os.Root, so no
// entry, link or link target can write outside dir; device nodes are skipped;
// file capabilities and other extended attributes are not restored.
// Ownership and permission bits are kept so the tree looks as the image does,
// but setuid and setgid bits are dropped: no_new_privs makes them inert in a
// sandbox, while on the host they would give any user who reaches the cache a
// root-owned setuid binary (SECURITY.md M3). A sparse file is refused (no
// engine writes one; archive/tar would expand its holes, a few kilobytes of
// archive into gigabytes of cache).
func extractRootfs(r io.Reader, dir string) (extractStats, error) {
	var st extractStats
	root, err := os.OpenRoot(dir)
	if err != nil {
		return st, err
	}
	defer root.Close()
	type dirMeta struct {
		name  string
		mode  fs.FileMode
		mtime time.Time
	}
	var dirs []dirMeta
	tr := tar.NewReader(r)
	buf := make([]byte, 256<<10)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("read archive: %w", err)
		}
		name, ok := cleanEntry(h.Name)
		if !ok {
			return st, fmt.Errorf("archive entry %q: path leaves the root", h.Name)
		}
		if workspace.IsSparse(h) {
			return st, fmt.Errorf("archive entry %q is a sparse file: image trees hold regular files only", h.Name)
		}
		if name == "." {
			continue
		}
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
		}
		mode := fs.FileMode(h.Mode).Perm() | modeBits(h.Mode)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			if err := root.Lchown(name, h.Uid, h.Gid); err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			dirs = append(dirs, dirMeta{name, mode, h.ModTime})
			st.Dirs++
		case tar.TypeReg:
			// A later entry replaces an earlier one; never write through a link.
			_ = root.Remove(name)
			f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			n, err := io.CopyBuffer(f, tr, buf)
			st.Bytes += n
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			// chown before chmod: chown would clear a setuid bit, were one set.
			if err := root.Lchown(name, h.Uid, h.Gid); err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			if err := root.Chmod(name, mode); err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			_ = root.Chtimes(name, h.ModTime, h.ModTime)
			st.Files++
		case tar.TypeSymlink:
			_ = root.Remove(name)
			// The target is stored as written; it is only ever resolved inside
			// the sandbox, whose root is this tree.
			if err := root.Symlink(h.Linkname, name); err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			if err := root.Lchown(name, h.Uid, h.Gid); err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			st.Links++
		case tar.TypeLink:
			target, ok := cleanEntry(h.Linkname)
			if !ok {
				return st, fmt.Errorf("archive entry %q: hard link target %q leaves the root", h.Name, h.Linkname)
			}
			_ = root.Remove(name)
			if err := root.Link(target, name); err != nil {
				return st, fmt.Errorf("%s: %w", name, err)
			}
			st.Links++
		default:
			st.Skipped++
		}
	}
	// Directory modes last, deepest first, so read-only directories do not
	// block their own contents.
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if err := root.Chmod(d.name, d.mode); err != nil {
			return st, fmt.Errorf("%s: %w", d.name, err)
		}
		_ = root.Chtimes(d.name, d.mtime, d.mtime)
	}
	return st, nil
}

// cleanEntry turns an archive name into a path relative to the root, or false
// when it climbs out.
func cleanEntry(name string) (string, bool) {
	name = strings.TrimLeft(name, "/")
	clean := path.Clean("/" + name)
	rel := strings.TrimPrefix(clean, "/")
	if rel == "" {
		rel = "."
	}
	// path.Clean of an absolute path never keeps a leading "..", so escaping
	// names collapse onto the root; refuse them instead of silently moving them.
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", false
		}
	}
	return rel, true
}

// modeBits maps the tar header's sticky bit; setuid and setgid are never
// restored.
func modeBits(m int64) fs.FileMode {
	if m&01000 != 0 {
		return fs.ModeSticky
	}
	return 0
}

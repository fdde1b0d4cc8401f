package workspace

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// Unpack extracts a tar stream into root. It runs inside the sandbox (aster-init)
// and is the second line of defence after Filter: every operation goes through
// os.Root, so neither a "../" name nor a symlink planted by an earlier entry can
// make a later entry land outside root. Ownership is the caller's; modes keep
// only permission bits.
func Unpack(r io.Reader, root *os.Root, caps Caps) (Stats, error) {
	caps = caps.withDefaults()
	tr := tar.NewReader(r)
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
		if hdr.Typeflag == tar.TypeGNUSparse || isSparse(hdr) {
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
		if dir := path.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return st, fmt.Errorf("create %s: %w", Quote(dir), err)
			}
		}
		mode := fs.FileMode(hdr.Mode) & fs.ModePerm
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, mode|0o700); err != nil {
				return st, fmt.Errorf("create %s: %w", Quote(name), err)
			}
		case tar.TypeReg:
			if hdr.Size > caps.MaxBytes-st.Bytes {
				return st, fmt.Errorf("%w: more than %d bytes of files", ErrTooLarge, caps.MaxBytes)
			}
			removeExisting(root, name)
			f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode|0o600)
			if err != nil {
				return st, fmt.Errorf("create %s: %w", Quote(name), err)
			}
			n, err := io.Copy(f, io.LimitReader(tr, hdr.Size))
			st.Bytes += n
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return st, fmt.Errorf("write %s: %w", Quote(name), err)
			}
		case tar.TypeSymlink:
			removeExisting(root, name)
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return st, fmt.Errorf("symlink %s: %w", Quote(name), err)
			}
		case tar.TypeLink:
			target, err := CleanName(hdr.Linkname)
			if err != nil {
				return st, fmt.Errorf("%w: hard link %s points outside the workspace", ErrUnsafe, Quote(name))
			}
			removeExisting(root, name)
			if err := root.Link(target, name); err != nil {
				return st, fmt.Errorf("link %s: %w", Quote(name), err)
			}
		default:
			return st, fmt.Errorf("%w: entry %s of unsupported type %q", ErrUnsafe, Quote(name), hdr.Typeflag)
		}
	}
}

// removeExisting makes room for an entry that replaces an earlier one of the
// same name (tar semantics: the last one wins). Directories are left alone.
func removeExisting(root *os.Root, name string) {
	if fi, err := root.Lstat(name); err == nil && !fi.IsDir() {
		_ = root.Remove(name)
	}
}

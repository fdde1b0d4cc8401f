package workspace

import (
	"archive/tar"
	"fmt"
	"io"
	"strings"
)

// Stats describe a validated or unpacked workspace.
type Stats struct {
	Files int64 // entries of any kind
	Bytes int64 // bytes of regular files
}

// Filter reads an untrusted tar stream from r, checks every entry, and writes a
// normalised tar to w: regular files, directories, symlinks (kept verbatim: inside
// the sandbox they can only point at the sandbox's own files) and hard links to an
// earlier member of the same archive. Device nodes, FIFOs, sparse files, absolute
// or escaping names, links to anything outside the archive, and archives over the
// caps are refused with ErrUnsafe or ErrTooLarge before the offending entry is
// written. Ownership is dropped and setuid/setgid/sticky bits are cleared.
//
// A name that an entry declared a symlink is never again anything but a symlink,
// nor the parent of a later entry, nor on the path of a hard link's target: an
// extractor would otherwise write through it. A symlink may not replace an
// earlier directory entry either.
//
// Cost: time is linear in the size of the input — each entry costs time
// proportional to the length of its name and link target plus its data, however
// deep or numerous the entries — and memory is one map entry per distinct name
// kept. The entry cap is checked before any work on an entry, and every regular
// file is counted at its declared size against MaxBytes before its data is
// copied, so w never receives more than MaxBytes of file data.
func Filter(r io.Reader, w io.Writer, caps Caps) (Stats, error) {
	return filter(r, w, caps, newTree())
}

// entrySet is what filter remembers of the entries it has written. tree is the
// one Filter uses; the benchmarks' reference (reference_test.go) puts the
// quadratic parent walk that tree replaced under the same checks.
type entrySet interface {
	add(name string, typ byte)
	kindOf(name string) byte          // 0 for a name not seen
	symlinkParent(name string) string // the shortest proper prefix that is a symlink, or ""
}

func filter(r io.Reader, w io.Writer, caps Caps, seen entrySet) (Stats, error) {
	caps = caps.withDefaults()
	tr := tar.NewReader(r)
	tw := tar.NewWriter(w)
	var st Stats
	var buf []byte
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, fmt.Errorf("%w: read archive: %v", ErrUnsafe, err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue // git archive writes one with the commit id
		}
		st.Files++
		if st.Files > caps.MaxFiles {
			return st, fmt.Errorf("%w: more than %d entries", ErrTooLarge, caps.MaxFiles)
		}
		out, err := checkEntry(hdr, seen)
		if err != nil {
			return st, err
		}
		if out == nil {
			st.Files-- // the workspace root itself ("./"): nothing to write
			continue
		}
		if out.Typeflag == tar.TypeReg {
			if out.Size > caps.MaxBytes-st.Bytes {
				return st, fmt.Errorf("%w: more than %d bytes of files (at %s)", ErrTooLarge, caps.MaxBytes, Quote(out.Name))
			}
			st.Bytes += out.Size
		}
		if err := tw.WriteHeader(out); err != nil {
			return st, fmt.Errorf("write archive: %w", err)
		}
		if out.Typeflag == tar.TypeReg && out.Size > 0 {
			if buf == nil {
				buf = make([]byte, 32<<10)
			}
			// One buffer for the whole archive: io.Copy would allocate one per
			// file (neither side has ReadFrom/WriteTo), 32 KiB per empty file.
			n, err := io.CopyBuffer(tw, tr, buf)
			if err != nil {
				return st, fmt.Errorf("copy %s: %w", Quote(out.Name), err)
			}
			if n != out.Size {
				return st, fmt.Errorf("%w: %s is truncated", ErrUnsafe, Quote(out.Name))
			}
		}
		seen.add(strings.TrimSuffix(out.Name, "/"), out.Typeflag)
	}
	if err := tw.Close(); err != nil {
		return st, fmt.Errorf("write archive: %w", err)
	}
	return st, nil
}

// checkEntry returns the normalised header to write, nil to skip the entry, or
// an error that refuses the whole archive.
func checkEntry(hdr *tar.Header, seen entrySet) (*tar.Header, error) {
	if err := checkType(hdr); err != nil {
		return nil, err
	}
	name, err := CleanName(hdr.Name)
	if err != nil {
		return nil, err
	}
	if name == "." {
		return nil, nil
	}
	if hdr.Size < 0 {
		return nil, fmt.Errorf("%w: %s has a negative size", ErrUnsafe, Quote(hdr.Name))
	}
	if err := checkPlace(hdr, name, seen); err != nil {
		return nil, err
	}
	out := &tar.Header{
		Name:    name,
		Mode:    hdr.Mode & 0o777,
		ModTime: hdr.ModTime,
		Format:  tar.FormatPAX,
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
		out.Typeflag = tar.TypeReg
		out.Size = hdr.Size
	case tar.TypeDir:
		out.Typeflag = tar.TypeDir
		out.Name += "/"
	case tar.TypeSymlink:
		if hdr.Linkname == "" || len(hdr.Linkname) > MaxPathBytes {
			return nil, fmt.Errorf("%w: symlink %s has an invalid target", ErrUnsafe, Quote(hdr.Name))
		}
		out.Typeflag = tar.TypeSymlink
		out.Linkname = hdr.Linkname
	case tar.TypeLink:
		target, err := CleanName(hdr.Linkname)
		if err != nil {
			return nil, fmt.Errorf("%w: hard link %s points outside the archive", ErrUnsafe, Quote(hdr.Name))
		}
		if dir := seen.symlinkParent(target); dir != "" {
			return nil, fmt.Errorf("%w: hard link %s names %s, which passes through the symlink %s", ErrUnsafe, Quote(hdr.Name), Quote(hdr.Linkname), Quote(dir))
		}
		if seen.kindOf(target) != tar.TypeReg {
			return nil, fmt.Errorf("%w: hard link %s names %s, which is not an earlier file of the archive", ErrUnsafe, Quote(hdr.Name), Quote(hdr.Linkname))
		}
		out.Typeflag = tar.TypeLink
		out.Linkname = target
	}
	return out, nil
}

// checkType refuses the entry types a workspace cannot hold.
func checkType(hdr *tar.Header) error {
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
	case tar.TypeChar, tar.TypeBlock:
		return fmt.Errorf("%w: device node %s", ErrUnsafe, Quote(hdr.Name))
	case tar.TypeFifo:
		return fmt.Errorf("%w: FIFO %s", ErrUnsafe, Quote(hdr.Name))
	case tar.TypeGNUSparse:
		return errSparse(hdr)
	default:
		return fmt.Errorf("%w: entry %s of unsupported type %q", ErrUnsafe, Quote(hdr.Name), hdr.Typeflag)
	}
	if IsSparse(hdr) {
		return errSparse(hdr)
	}
	return nil
}

// IsSparse reports whether hdr describes a GNU sparse file, in the old GNU
// encoding (typeflag 'S') or one of the PAX ones (GNU.sparse.* records,
// versions 0.0, 0.1 and 1.0). archive/tar presents a PAX one as a regular
// file of its declared, logical size and fills the holes with zeros as it is
// read, so a few kilobytes of archive can stand for gigabytes of data. Every
// extractor of an archive Aster did not write refuses them.
func IsSparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

func errSparse(hdr *tar.Header) error {
	return fmt.Errorf("%w: %s is a sparse file; sparse files are not supported in a workspace; pack them as regular files", ErrUnsafe, Quote(hdr.Name))
}

// checkPlace refuses an entry whose name, once extracted, would be written
// through a symlink of the archive, or would turn a symlink into something else.
func checkPlace(hdr *tar.Header, name string, seen entrySet) error {
	if dir := seen.symlinkParent(name); dir != "" {
		return fmt.Errorf("%w: %s passes through the symlink %s", ErrUnsafe, Quote(hdr.Name), Quote(dir))
	}
	prev := seen.kindOf(name)
	switch {
	case prev == tar.TypeSymlink && hdr.Typeflag != tar.TypeSymlink:
		return fmt.Errorf("%w: %s names the earlier symlink %s as %s", ErrUnsafe, Quote(hdr.Name), Quote(name), kindName(hdr.Typeflag))
	case prev == tar.TypeDir && hdr.Typeflag == tar.TypeSymlink:
		return fmt.Errorf("%w: symlink %s replaces the earlier directory %s", ErrUnsafe, Quote(hdr.Name), Quote(name))
	}
	return nil
}

func kindName(typ byte) string {
	switch typ {
	case tar.TypeDir:
		return "a directory"
	case tar.TypeLink:
		return "a hard link"
	default:
		return "a file"
	}
}

package workspace

// mainFilter is Filter as it was before its checks were made linear (commit
// e9769b2), kept only so that the benchmarks can measure both side by side
// (go test -bench Filter -reference). Do not use it for anything else.

import (
	"archive/tar"
	"fmt"
	"io"
	"path"
	"strings"
)

func mainFilter(r io.Reader, w io.Writer, caps Caps) (Stats, error) {
	caps = caps.withDefaults()
	tr := tar.NewReader(r)
	tw := tar.NewWriter(w)
	var st Stats
	seen := make(map[string]byte) // cleaned name → typeflag
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, fmt.Errorf("%w: read archive: %v", ErrUnsafe, err)
		}
		out, err := mainCheckHeader(hdr, seen)
		if err != nil {
			return st, err
		}
		if out == nil {
			continue
		}
		st.Files++
		if st.Files > caps.MaxFiles {
			return st, fmt.Errorf("%w: more than %d entries", ErrTooLarge, caps.MaxFiles)
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
		if out.Typeflag == tar.TypeReg {
			n, err := io.Copy(tw, tr)
			if err != nil {
				return st, fmt.Errorf("copy %s: %w", Quote(out.Name), err)
			}
			if n != out.Size {
				return st, fmt.Errorf("%w: %s is truncated", ErrUnsafe, Quote(out.Name))
			}
		}
		seen[strings.TrimSuffix(out.Name, "/")] = out.Typeflag
	}
	if err := tw.Close(); err != nil {
		return st, fmt.Errorf("write archive: %w", err)
	}
	return st, nil
}

// mainCheckHeader returns the normalised header to write, nil to skip the entry, or
// an error that refuses the whole archive.
func mainCheckHeader(hdr *tar.Header, seen map[string]byte) (*tar.Header, error) {
	out, err := mainCheckEntry(hdr, seen)
	if err != nil || out == nil {
		return out, err
	}
	// An entry below an earlier symlink would be written through it.
	name := strings.TrimSuffix(out.Name, "/")
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if seen[dir] == tar.TypeSymlink {
			return nil, fmt.Errorf("%w: %s passes through the symlink %s", ErrUnsafe, Quote(hdr.Name), Quote(dir))
		}
	}
	return out, nil
}

func mainCheckEntry(hdr *tar.Header, seen map[string]byte) (*tar.Header, error) {
	switch hdr.Typeflag {
	case tar.TypeXGlobalHeader:
		return nil, nil // git archive writes one with the commit id
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
	case tar.TypeChar, tar.TypeBlock:
		return nil, fmt.Errorf("%w: device node %s", ErrUnsafe, Quote(hdr.Name))
	case tar.TypeFifo:
		return nil, fmt.Errorf("%w: FIFO %s", ErrUnsafe, Quote(hdr.Name))
	default:
		return nil, fmt.Errorf("%w: entry %s of unsupported type %q", ErrUnsafe, Quote(hdr.Name), hdr.Typeflag)
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
		if seen[target] != tar.TypeReg {
			return nil, fmt.Errorf("%w: hard link %s names %s, which is not an earlier file of the archive", ErrUnsafe, Quote(hdr.Name), Quote(hdr.Linkname))
		}
		out.Typeflag = tar.TypeLink
		out.Linkname = target
	}
	return out, nil
}

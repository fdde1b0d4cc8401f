package app

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/asterhq/aster/internal/workspace"
)

// GitHub's tarball of a commit is gzip-compressed and puts every path under one top
// directory ("owner-repo-sha7/"). openArchive turns the downloaded file into what the
// pipeline reads: an uncompressed tar of the tree itself. Nothing is unpacked on the host:
// entries are re-streamed, names only lose their first component (the pipeline validates
// them again before any sandbox sees them).
func openArchive(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open archive: %w", err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("archive: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		err := stripTop(tar.NewReader(zr), pw)
		zr.Close()
		f.Close()
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// maxArchiveEntries bounds the entries of one archive.
const maxArchiveEntries = 1_000_000

func stripTop(tr *tar.Reader, w io.Writer) error {
	tw := tar.NewWriter(w)
	top := ""
	for n := 0; ; n++ {
		if n > maxArchiveEntries {
			return errors.New("archive: too many entries")
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name := strings.TrimPrefix(h.Name, "./")
		first, rest, ok := strings.Cut(name, "/")
		if top == "" {
			top = first
		}
		if first != top {
			return fmt.Errorf("archive: entry %q outside the top directory", h.Name)
		}
		if !ok || rest == "" {
			continue // the top directory itself
		}
		if workspace.IsSparse(h) {
			// Its records are dropped below: the copy would be a regular
			// file as large as the holes, written out in zeros.
			return fmt.Errorf("archive: %q is a sparse file; a repository archive holds none", h.Name)
		}
		h.Name = rest
		if h.Typeflag == tar.TypeLink {
			// A hard link names another entry by its full path.
			if _, target, ok := strings.Cut(strings.TrimPrefix(h.Linkname, "./"), "/"); ok {
				h.Linkname = target
			}
		}
		h.PAXRecords = nil
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.CopyN(tw, tr, h.Size); err != nil {
				return fmt.Errorf("archive: %w", err)
			}
		}
	}
	return tw.Close()
}

package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// FileSource is a file to pack whose content is read when it is written, so
// that a workspace given as files need not be held in memory: its size, its
// executable bit, and where its bytes come from.
type FileSource struct {
	// Size is the content's length; Open must give exactly that many bytes.
	Size int64
	// Script marks content that starts with "#!": packed with mode 0755, as
	// PackFiles does.
	Script bool
	// Open returns a reader of the content.
	Open func() (io.Reader, error)
}

// BytesSource is the FileSource of content held in memory.
func BytesSource(data []byte) FileSource {
	return FileSource{Size: int64(len(data)), Script: bytes.HasPrefix(data, []byte("#!")),
		Open: func() (io.Reader, error) { return bytes.NewReader(data), nil }}
}

// copyTo writes exactly Size bytes of the content to w.
func (s FileSource) copyTo(w io.Writer, name string) error {
	if s.Size == 0 && s.Open == nil {
		return nil
	}
	r, err := s.Open()
	if err != nil {
		return fmt.Errorf("read %s: %w", Quote(name), err)
	}
	n, err := io.CopyN(w, r, s.Size)
	if err == nil && n == s.Size {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = fmt.Errorf("content ends after %d of %d bytes", n, s.Size)
	}
	return fmt.Errorf("read %s: %w", Quote(name), err)
}

// PackSources is PackFiles for files read from their sources: the same
// checks and errors, the same entries in the same order.
func PackSources(files map[string]FileSource, w io.Writer, caps Caps) (Stats, error) {
	tw := tar.NewWriter(w)
	st, err := writeSources(tw, files, caps.withDefaults())
	if err != nil {
		return st, err
	}
	return st, tw.Close()
}

// SpoolFiles packs files (PackSources) into a temporary file unlinked at
// once, as Spool does for an archive: a workspace given as files becomes a
// snapshot like an uploaded one. SpoolOptions.Caps bound the files;
// SpoolOptions.Grow, when set, is asked for the bytes of every write first.
func SpoolFiles(files map[string]FileSource, o SpoolOptions) (*Spooled, error) {
	f, err := os.CreateTemp(o.Dir, "aster-spool-*.tar")
	if err != nil {
		return nil, fmt.Errorf("spool files: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("spool files: %w", err)
	}
	w := &spoolWriter{f: f, max: o.MaxArchiveBytes, hook: o.Hook, grow: o.Grow}
	st, err := PackSources(files, w, o.Caps)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Spooled{file: f, size: w.n, Stats: st}, nil
}

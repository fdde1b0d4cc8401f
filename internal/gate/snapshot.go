package gate

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/asterhq/aster/internal/workspace"
)

// Snapshot is a repository tree as a tar file on the host, spooled once and
// opened by every analyzer's sandbox. The host never unpacks it.
type Snapshot struct {
	path  string
	open  func() (io.ReadCloser, error)
	files []string
	stats workspace.Stats
	owned bool
}

// NewSnapshotFrom wraps any re-openable tar (for example a snapshot the HTTP
// layer already validated and spooled) whose regular files are files.
func NewSnapshotFrom(open func() (io.ReadCloser, error), files []string, stats workspace.Stats) *Snapshot {
	fs := slices.Clone(files)
	slices.Sort(fs)
	return &Snapshot{open: open, files: fs, stats: stats}
}

// NewSnapshot wraps an existing tar file whose regular files are files. The
// caller keeps ownership of the file.
func NewSnapshot(tarPath string, files []string, stats workspace.Stats) *Snapshot {
	fs := slices.Clone(files)
	slices.Sort(fs)
	return &Snapshot{path: tarPath, files: fs, stats: stats}
}

// SpoolSnapshot validates an untrusted tar stream (workspace.Filter: no
// escaping names, no devices, size and entry caps) into a temporary file in
// dir and lists its regular files. Remove deletes the file.
func SpoolSnapshot(r io.Reader, dir string, caps workspace.Caps) (*Snapshot, error) {
	f, err := os.CreateTemp(dir, "aster-snapshot-*.tar")
	if err != nil {
		return nil, fmt.Errorf("spool snapshot: %w", err)
	}
	s := &Snapshot{path: f.Name(), owned: true}
	st, err := workspace.Filter(r, f, caps)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("spool snapshot: %w", cerr)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, err
	}
	s.stats = st
	if s.files, err = listTar(f.Name()); err != nil {
		_ = os.Remove(f.Name())
		return nil, err
	}
	return s, nil
}

// listTar returns the names of the regular files of a (validated) tar file.
func listTar(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list snapshot: %w", err)
		}
		if h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Open returns a fresh reader over the tar.
func (s *Snapshot) Open() (io.ReadCloser, error) {
	if s.open != nil {
		return s.open()
	}
	return os.Open(s.path)
}

// Files returns the regular files, sorted. Do not modify the slice.
func (s *Snapshot) Files() []string { return s.files }

// Stats returns the number of entries and bytes of regular files.
func (s *Snapshot) Stats() workspace.Stats { return s.stats }

// Remove deletes a spooled snapshot's file; a wrapped one is left alone.
func (s *Snapshot) Remove() error {
	if !s.owned {
		return nil
	}
	return os.Remove(s.path)
}

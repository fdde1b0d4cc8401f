package gate

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
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
	// spooled is the file of a SpoolSnapshot, released by Remove.
	spooled *workspace.Spooled
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
// dir, unlinked at once (workspace.Spool), and lists its regular files. Remove
// releases the file.
func SpoolSnapshot(r io.Reader, dir string, caps workspace.Caps) (*Snapshot, error) {
	sp, err := workspace.Spool(r, workspace.SpoolOptions{Dir: dir, Caps: caps})
	if err != nil {
		return nil, err
	}
	files, err := sp.Files()
	if err != nil {
		sp.Close()
		return nil, err
	}
	return &Snapshot{open: func() (io.ReadCloser, error) { return io.NopCloser(sp.Reader()), nil },
		files: files, stats: sp.Stats, spooled: sp}, nil
}

// Open returns a fresh reader over the tar.
func (s *Snapshot) Open() (io.ReadCloser, error) {
	if s.open != nil {
		return s.open()
	}
	return os.Open(s.path)
}

// OpenOnly returns a reader over a tar of the snapshot's regular files in
// keep (a subset of Files) and the directories above them, in the
// snapshot's order; every other entry is left out. A keep that holds every
// file is the snapshot itself. The tar is written as it is read; closing the
// reader early stops the writing.
func (s *Snapshot) OpenOnly(keep []string) (io.ReadCloser, error) {
	if len(keep) >= len(s.files) {
		return s.Open()
	}
	src, err := s.Open()
	if err != nil {
		return nil, err
	}
	files := make(map[string]bool, len(keep))
	dirs := map[string]bool{}
	for _, f := range keep {
		files[f] = true
		for d := path.Dir(f); d != "." && d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	pr, pw := io.Pipe()
	go func() {
		defer src.Close()
		pw.CloseWithError(copyOnly(src, pw, files, dirs))
	}()
	return pr, nil
}

// copyOnly copies from the tar src to dst the regular files in files and
// the directories in dirs.
func copyOnly(src io.Reader, dst io.Writer, files, dirs map[string]bool) error {
	tr := tar.NewReader(src)
	tw := tar.NewWriter(dst)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tw.Close()
		}
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		name, err := workspace.CleanName(h.Name)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		switch {
		case h.Typeflag == tar.TypeDir && dirs[name]:
		case h.Typeflag == tar.TypeReg && files[name]:
		default:
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, tr); err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
		}
	}
}

// Files returns the regular files, sorted. Do not modify the slice.
func (s *Snapshot) Files() []string { return s.files }

// Stats returns the number of entries and bytes of regular files.
func (s *Snapshot) Stats() workspace.Stats { return s.stats }

// Remove releases a spooled snapshot's file; a wrapped one is left alone.
func (s *Snapshot) Remove() error {
	return s.spooled.Close()
}

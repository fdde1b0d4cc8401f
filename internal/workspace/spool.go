package workspace

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// ErrSpoolFull marks a spooled archive that reached SpoolOptions.MaxArchiveBytes.
// It is also ErrTooLarge.
var ErrSpoolFull = fmt.Errorf("%w: spool file full", ErrTooLarge)

// SpoolOptions bound one Spool.
type SpoolOptions struct {
	// Dir holds the temporary file ("" is os.TempDir()).
	Dir string
	// Caps bound the archive's files (Filter's caps).
	Caps Caps
	// MaxArchiveBytes, when positive, caps the normalised archive itself,
	// headers included, so the file never grows past it: a write that would
	// fails with ErrSpoolFull.
	MaxArchiveBytes int64
	// Hook, when set (tests), sees the file after every write.
	Hook func(*os.File)
	// Grow, when set, is asked for the bytes of every write before it is
	// made (the caller's disk budget); its error stops the spool.
	Grow func(n int64) error
}

// Spooled is a validated, normalised archive in a temporary file that was
// unlinked as soon as it was created: the open file is all there is, so
// nothing is left on disk whatever happens. Close releases it.
type Spooled struct {
	file  *os.File
	size  int64
	Stats Stats
}

// Spool validates an untrusted tar stream (Filter) into a temporary file and
// returns it ready to read. Filter's errors (ErrUnsafe, ErrTooLarge) and r's
// read errors are returned wrapped, so callers can class them.
func Spool(r io.Reader, o SpoolOptions) (*Spooled, error) {
	f, err := os.CreateTemp(o.Dir, "aster-spool-*.tar")
	if err != nil {
		return nil, fmt.Errorf("spool archive: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("spool archive: %w", err)
	}
	w := &spoolWriter{f: f, max: o.MaxArchiveBytes, hook: o.Hook, grow: o.Grow}
	st, err := Filter(r, w, o.Caps)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Spooled{file: f, size: w.n, Stats: st}, nil
}

// Reader returns a fresh reader over the archive; readers may be used at once
// from several goroutines.
func (s *Spooled) Reader() *io.SectionReader { return io.NewSectionReader(s.file, 0, s.size) }

// Size is the archive's length in bytes.
func (s *Spooled) Size() int64 { return s.size }

// Names lists the archive's entry names in order, at most max of them.
func (s *Spooled) Names(max int) ([]string, error) {
	return s.list(max, false)
}

// Files lists the archive's regular files, sorted.
func (s *Spooled) Files() ([]string, error) {
	names, err := s.list(-1, true)
	slices.Sort(names)
	return names, err
}

func (s *Spooled) list(max int, regularOnly bool) ([]string, error) {
	tr := tar.NewReader(s.Reader())
	var names []string
	for max < 0 || len(names) < max {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return names, fmt.Errorf("list archive: %w", err)
		}
		if !regularOnly || h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
		}
	}
	return names, nil
}

// Close releases the file. A nil Spooled is closed already.
func (s *Spooled) Close() error {
	if s == nil || s.file == nil {
		return nil
	}
	return s.file.Close()
}

// spoolWriter writes the spool file and refuses a write that would take it
// past max.
type spoolWriter struct {
	f    *os.File
	max  int64
	n    int64
	hook func(*os.File)
	grow func(int64) error
}

func (w *spoolWriter) Write(p []byte) (int, error) {
	if w.max > 0 && int64(len(p)) > w.max-w.n {
		return 0, ErrSpoolFull
	}
	if w.grow != nil {
		if err := w.grow(int64(len(p))); err != nil {
			return 0, err
		}
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	if w.hook != nil {
		w.hook(w.f)
	}
	return n, err
}

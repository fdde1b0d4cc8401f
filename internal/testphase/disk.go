package testphase

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Disk is a job's share of the host's disk. Every byte the job writes to a
// temporary file of its own (the dependency archive) is taken from it before
// it is written, and given back when the file goes. /v1/test passes the
// request's reservation of the server's spool space (--max-spool), which
// already holds its snapshot: one budget then covers everything a request
// puts on the host, from the first phase to the end, including while its
// test phase waits for a slot.
type Disk interface {
	// Grow takes n more bytes, or fails at once: sandbox.ErrBusy when other
	// requests hold the space, sandbox.ErrTooLarge when it could never fit.
	Grow(n int64) error
	// Give returns n bytes taken before.
	Give(n int64)
}

// diskUse is one job's use of its Disk (nil: nothing is counted). It keeps
// the first refusal: a refused write surfaces as a failed export or
// workspace, and the job answers with the refusal instead, classed.
type diskUse struct {
	disk    Disk
	mu      sync.Mutex
	refusal error
}

func (u *diskUse) grow(n int64) error {
	if u.disk == nil {
		return nil
	}
	err := u.disk.Grow(n)
	if err != nil {
		u.mu.Lock()
		if u.refusal == nil {
			u.refusal = fmt.Errorf("host disk for the test run's files: %w", err)
		}
		u.mu.Unlock()
	}
	return err
}

func (u *diskUse) give(n int64) {
	if u.disk != nil && n > 0 {
		u.disk.Give(n)
	}
}

// refused is the first refusal, or nil.
func (u *diskUse) refused() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.refusal
}

// errTempFull marks a write past a temporary file's own cap.
var errTempFull = errors.New("temporary file larger than its cap")

// tempFile is a temporary file of one job. It is unlinked as soon as it is
// created, like workspace.Spool's files: the open descriptor is all there
// is, so nothing is left on disk whatever becomes of the process, kill -9
// included. It is capped, and counted in the job's disk as it grows.
type tempFile struct {
	f    *os.File
	n    int64
	max  int64
	disk *diskUse
}

func newTempFile(dir, pattern string, max int64, disk *diskUse) (*tempFile, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return &tempFile{f: f, max: max, disk: disk}, nil
}

// Write takes len(p) from the job's disk first, so the file never holds a
// byte the budget did not grant.
func (t *tempFile) Write(p []byte) (int, error) {
	if t.max > 0 && int64(len(p)) > t.max-t.n {
		return 0, fmt.Errorf("%w (%d bytes)", errTempFull, t.max)
	}
	if err := t.disk.grow(int64(len(p))); err != nil {
		return 0, err
	}
	n, err := t.f.Write(p)
	t.n += int64(n)
	t.disk.give(int64(len(p) - n))
	return n, err
}

// Reader is a fresh reader over what was written.
func (t *tempFile) Reader() io.Reader { return io.NewSectionReader(t.f, 0, t.n) }

// Close releases the file and gives its bytes back. A nil tempFile is
// closed already.
func (t *tempFile) Close() {
	if t == nil || t.f == nil {
		return
	}
	t.f.Close()
	t.f = nil
	t.disk.give(t.n)
}

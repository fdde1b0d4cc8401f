package sandbox

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/asterhq/aster/internal/units"
	"github.com/asterhq/aster/internal/workspace"
)

// Pausing and archives of a session: what a long life adds to a held sandbox
// beyond one command at a time.

// Pauser is a SessionInstance that can freeze every process of its sandbox
// (the cgroup freezer: no CPU, memory kept) and thaw it.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// ErrPauseUnsupported: the runtime cannot freeze a held sandbox.
var ErrPauseUnsupported = fmt.Errorf("%w: this runtime cannot pause a session", ErrUnavailable)

// Pause freezes the session: its processes get no CPU and keep their memory.
// A paused session still ends at its TTL (pausing never extends a life) and
// at its idle timeout; any call (exec, a file operation) resumes it first.
func (s *Sandbox) Pause(ctx context.Context) error {
	p, ok := s.inst.(Pauser)
	if !ok {
		return ErrPauseUnsupported
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return fmt.Errorf("%w %s has ended (%s)", ErrSessionGone, s.id, s.reason)
	case s.paused:
		return nil
	case s.running > 0:
		return fmt.Errorf("%w: session %s runs %d commands; pause it when they have ended", ErrBusy, s.id, s.running)
	}
	if err := p.Pause(ctx); err != nil {
		return fmt.Errorf("pause session %s: %w", s.id, err)
	}
	s.paused = true
	if so, ok := s.m.obs.(SessionObserver); ok {
		so.SessionPaused(true)
	}
	s.m.log.Debug("session paused", "session", s.id)
	return nil
}

// Resume thaws a paused session; resuming a running one does nothing.
func (s *Sandbox) Resume(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w %s has ended (%s)", ErrSessionGone, s.id, s.reason)
	}
	return s.resumeLocked(ctx)
}

func (s *Sandbox) resumeLocked(ctx context.Context) error {
	if !s.paused {
		return nil
	}
	if err := s.inst.(Pauser).Resume(ctx); err != nil {
		return fmt.Errorf("resume session %s: %w", s.id, err)
	}
	s.paused = false
	if so, ok := s.m.obs.(SessionObserver); ok {
		so.SessionPaused(false)
	}
	s.m.log.Debug("session resumed", "session", s.id)
	return nil
}

// Paused reports whether the session is frozen.
func (s *Sandbox) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// maxArchiveBytes is the most a directory archive of the session may be.
func (s *Sandbox) maxArchiveBytes() int64 {
	so := s.m.opts.Sessions.withDefaults()
	// tar adds 512 bytes of header per entry and pads each file to 512:
	// the most /work can hold plus generous room for that.
	return min(so.MaxArchiveBytes, s.limits.WorkdirBytes+s.limits.WorkdirBytes/4+1<<20)
}

// GetArchive returns an uncompressed tar archive of the directory at path
// ("" or "." for /work), made inside the sandbox by the job user. Larger than
// the session's archive cap is ErrTooLarge.
func (s *Sandbox) GetArchive(ctx context.Context, dir string) ([]byte, error) {
	name, err := filePath(dir, true)
	if err != nil {
		return nil, err
	}
	argv := []string{"tar", "--create", "--file=-", "--format=gnu", "--numeric-owner", "--directory=./" + name, "."}
	res, err := s.fileOp(ctx, s.fileJob(argv, nil, s.maxArchiveBytes()))
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("%w: the archive of %s is larger than %s", ErrTooLarge, workspace.Quote(name), units.FormatBytes(s.maxArchiveBytes()))
		}
		return nil, err
	}
	return res.Stdout.Data, nil
}

// PutArchive unpacks an uncompressed tar archive into the directory at path
// ("" or "." for /work), replacing files of the same names. The archive is
// checked as a one-shot run's snapshot is (no absolute or ../ names, no link
// out of the tree, no devices, size and entry caps; set-id bits dropped) and
// unpacked inside the sandbox by the job user.
func (s *Sandbox) PutArchive(ctx context.Context, dir string, r io.Reader) error {
	name, err := filePath(dir, true)
	if err != nil {
		return err
	}
	caps := workspace.Caps{MaxBytes: s.limits.WorkdirBytes}
	spooled, err := workspace.Spool(r, workspace.SpoolOptions{Caps: caps, MaxArchiveBytes: s.maxArchiveBytes()})
	if err != nil {
		return WorkspaceError("archive", err, ErrInvalidSpec)
	}
	defer spooled.Close()
	archive := io.Reader(spooled.Reader())
	if name != "." {
		archive = prefixArchive(spooled.Reader(), name)
	}
	_, err = s.fileOp(ctx, Job{Argv: []string{"true"}, Limits: s.fileJob(nil, nil, 4096).Limits, Workspace: Workspace{Tar: archive}})
	return err
}

// prefixArchive streams a tar archive with every name (and hard link target)
// moved under dir. The names are checked again where the archive is unpacked.
func prefixArchive(r io.Reader, dir string) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		tr := tar.NewReader(r)
		tw := tar.NewWriter(pw)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				pw.CloseWithError(tw.Close())
				return
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			hdr.Name = path.Join(dir, hdr.Name)
			if hdr.Typeflag == tar.TypeDir {
				hdr.Name += "/"
			}
			if hdr.Typeflag == tar.TypeLink {
				hdr.Linkname = path.Join(dir, hdr.Linkname)
			}
			if err := tw.WriteHeader(hdr); err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := io.Copy(tw, tr); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

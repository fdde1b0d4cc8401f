package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Memory snapshots of a session: its whole sandbox — processes, memory,
// /work and /tmp — saved by the runtime (gVisor's `runsc checkpoint`) and
// restored into any number of new sessions (forks), each independent.

// Checkpointer is a SessionInstance whose runtime can save the running
// sandbox whole into a directory and keep it running.
type Checkpointer interface {
	// CanCheckpoint reports whether this runtime checkpoints at all; nil
	// means it can, else the error to answer.
	CanCheckpoint() error
	// Checkpoint saves the sandbox into dir (empty, made by the caller).
	// The sandbox runs on afterwards with every process and its memory as
	// they were; no exec may run meanwhile.
	Checkpoint(ctx context.Context, dir string) error
}

// RestoreRuntime is a SessionRuntime that starts a held sandbox from a
// checkpoint directory instead of an image.
type RestoreRuntime interface {
	RestoreSession(ctx context.Context, opts PrepareOptions, dir string) (SessionInstance, error)
}

// ErrMemorySnapshotUnsupported: the runtime keeps no memory of a session.
func errMemorySnapshotUnsupported(runtime string) error {
	return Invalidf("memory snapshots need the gvisor runtime (runsc checkpoint and restore); this server runs %s: take a snapshot of /work without \"memory\"", runtime)
}

// MemorySnapshot is a checkpoint of a session: where it is and what a fork
// of it must be (the image and limits of the session it was taken from).
type MemorySnapshot struct {
	Dir         string
	Image       string
	ImageDigest string
	Limits      Limits
	// SizeBytes is what the checkpoint takes on disk.
	SizeBytes int64
}

// CanSnapshotMemory returns nil when the session's runtime can take a
// memory snapshot, else the error that says why not.
func (s *Sandbox) CanSnapshotMemory() error {
	c, ok := s.inst.(Checkpointer)
	if !ok {
		return errMemorySnapshotUnsupported(s.m.opts.Runtime.Name())
	}
	return c.CanCheckpoint()
}

// memoryCheckScript runs as the job user before a checkpoint: it drops the
// set-id bits of every file in /work and /tmp (all the job user's own) and
// prints any set-id file or device node left, which refuses the snapshot.
// The mounts are nosuid and nodev and the job user has no CAP_MKNOD, so
// neither could take effect in a fork anyway; this keeps them out of it.
const memoryCheckScript = `find /work /tmp -xdev -type f -perm /6000 -exec chmod ug-s {} + 2>/dev/null
find /work /tmp -xdev \( -perm /6000 -o -type b -o -type c \) -print 2>/dev/null | head -n 3`

// SnapshotMemory checkpoints the session into dir (empty, made by the
// caller) and keeps it running: every process with its memory, /work and
// /tmp. It is refused while commands run (ErrBusy), on a runtime that
// cannot checkpoint, and when /work or /tmp hold a set-id file or a device.
func (s *Sandbox) SnapshotMemory(ctx context.Context, dir string) (MemorySnapshot, error) {
	if err := s.CanSnapshotMemory(); err != nil {
		return MemorySnapshot{}, err
	}
	res, err := s.fileOp(ctx, s.fileJob([]string{"sh", "-c", memoryCheckScript}, nil, 4096))
	if err != nil {
		return MemorySnapshot{}, fmt.Errorf("check the session before its checkpoint: %w", err)
	}
	if left := strings.TrimSpace(string(res.Stdout.Data)); left != "" {
		return MemorySnapshot{}, Invalidf("the session holds a set-id file or a device node (%s), which a memory snapshot does not carry: remove it first", strings.ReplaceAll(left, "\n", ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return MemorySnapshot{}, fmt.Errorf("%w %s has ended (%s)", ErrSessionGone, s.id, s.reason)
	case s.running > 0:
		return MemorySnapshot{}, fmt.Errorf("%w: session %s runs %d commands; take a memory snapshot when they have ended", ErrBusy, s.id, s.running)
	}
	if err := s.resumeLocked(ctx); err != nil {
		return MemorySnapshot{}, err
	}
	t0 := s.m.clock()
	if err := s.inst.(Checkpointer).Checkpoint(ctx, dir); err != nil {
		return MemorySnapshot{}, fmt.Errorf("memory snapshot of session %s: %w", s.id, err)
	}
	s.lastUsed = s.m.clock()
	size, err := dirSize(dir)
	if err != nil {
		return MemorySnapshot{}, fmt.Errorf("memory snapshot of session %s: %w", s.id, err)
	}
	s.m.log.Debug("session checkpointed", "session", s.id, "bytes", size, "took", s.m.clock().Sub(t0))
	return MemorySnapshot{Dir: dir, Image: s.image, ImageDigest: s.digest, Limits: s.limits, SizeBytes: size}, nil
}

// forkOf checks a spec that restores a memory snapshot on rt and gives it
// the snapshot's image and limits.
func (spec *SessionSpec) forkOf(rt Runtime) error {
	mem := spec.Memory
	if _, ok := rt.(RestoreRuntime); !ok {
		return errMemorySnapshotUnsupported(rt.Name())
	}
	switch {
	case spec.Archive != nil:
		return Invalidf("a session starts from a memory snapshot or an archive, not both")
	case spec.Image != "" && spec.Image != mem.Image:
		return Invalidf("a fork of a memory snapshot runs its image (%s), not %s", mem.Image, spec.Image)
	case spec.Limits != (Limits{}) && spec.Limits != mem.Limits:
		return Invalidf("a fork of a memory snapshot keeps the limits of the session it was taken from: give none")
	}
	spec.Image, spec.Limits = mem.Image, mem.Limits
	return nil
}

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// Memory snapshots of gVisor sessions. `runsc checkpoint` saves the whole
// sandbox — the sentry's kernel state: every process and its memory, and
// the /work and /tmp tmpfs, which live in the sentry's memory — into an
// image directory and ends the sandbox. The session is then restored in
// place (`runsc restore`, same container id and bundle, new stdio pipes for
// its holder), and any number of forks are restored from the same image,
// each a sandbox of its own under a new id.

// checkpointMetaFile, in a checkpoint directory, is what a restore needs
// beside runsc's image.
const checkpointMetaFile = "aster-checkpoint.json"

// checkpointMeta: the root filesystem the sandbox ran on (a restore needs
// the same tree) and the uids its processes run as (kept by a fork: its
// files in /work belong to them).
type checkpointMeta struct {
	Rootfs  string `json:"rootfs"`
	InitUID int    `json:"init_uid"`
	JobUID  int    `json:"job_uid"`

	dir string // the checkpoint directory, when restoring
}

// restoreWait bounds how long a restored sandbox may take to run.
const restoreWait = 60 * time.Second

func (r *Runtime) checkpointUnsupported() error {
	if r.kind == "runsc" {
		return nil
	}
	return sandbox.Invalidf("memory snapshots need the gvisor runtime (runsc checkpoint and restore); this server runs %s: take a snapshot of /work without \"memory\"", r.Name())
}

// CanCheckpoint implements sandbox.Checkpointer: gVisor only.
func (s *sessionInstance) CanCheckpoint() error { return s.current().rt.checkpointUnsupported() }

// Checkpoint implements sandbox.Checkpointer: `runsc checkpoint` into dir,
// then the session restored in place from it. The caller runs no exec
// meanwhile. A failed restore ends the session.
func (s *sessionInstance) Checkpoint(ctx context.Context, dir string) error {
	old := s.current()
	if err := old.rt.checkpointUnsupported(); err != nil {
		return err
	}
	swap := make(chan struct{})
	s.mu.Lock()
	s.swap = swap
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.swap = nil
		s.mu.Unlock()
		close(swap)
	}()
	t0 := time.Now()
	if out, err := old.rt.output(ctx, "checkpoint", "--image-path", dir, old.id); err != nil {
		return fmt.Errorf("runsc checkpoint: %v: %s", err, strings.TrimSpace(string(out)))
	}
	took := time.Since(t0)
	b, err := json.Marshal(old.procs)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, checkpointMetaFile), b, 0o600)
	}
	if err != nil {
		old.destroy()
		return fmt.Errorf("record the checkpoint: %w (the session has ended)", err)
	}
	// The checkpoint ended the sandbox: its `runsc run` exits and removes
	// the container's state.
	if !waitClosed(old.exited, killWait) {
		old.destroy()
		return fmt.Errorf("runsc checkpoint left the sandbox running (the session has ended)")
	}
	old.retire()
	if old.rt.hasState(old.id) {
		_, _ = old.rt.output(context.WithoutCancel(ctx), "delete", "--force", old.id)
	}
	next := &instance{rt: old.rt, id: old.id, dir: old.dir, ident: old.ident, pidfd: -1, exited: make(chan struct{}),
		cgroup: old.cgroup, pidsCgroup: old.pidsCgroup, procs: old.procs}
	next.SetTiming("checkpoint", took)
	s.mu.Lock()
	s.inst = next
	s.mu.Unlock()
	if err := next.restore(ctx, dir); err != nil {
		next.destroy()
		return fmt.Errorf("restore the session after its checkpoint: %w (the session has ended)", err)
	}
	old.rt.log.Debug("session checkpointed", "sandbox", old.id, "checkpoint", took, "restore", next.Timings()["restore"])
	return nil
}

// retire releases what the host held of a sandbox that a checkpoint ended
// and a restore under the same id replaces: its pipes and pidfd. The bundle,
// identity and cgroups pass to the restored one.
func (i *instance) retire() {
	if i.stdin != nil {
		i.stdin.Close()
	}
	if i.stdout != nil {
		i.stdout.Close()
	}
	waitClosed(i.logDone, time.Second)
	i.pidMu.Lock()
	if i.pidfd >= 0 {
		unix.Close(i.pidfd)
		i.pidfd = -1
	}
	i.pidMu.Unlock()
}

// restore starts the sandbox from the checkpoint in image (`runsc restore`
// with new pipes as its stdio: the holder, blocked on its stdin, reads the
// new one) and waits until it runs. No hello: the holder said it before the
// checkpoint.
func (i *instance) restore(ctx context.Context, image string) error {
	t0 := time.Now()
	if err := i.start(image); err != nil {
		return err
	}
	if err := i.awaitRunning(ctx); err != nil {
		return err
	}
	i.SetTiming("restore", time.Since(t0))
	i.openPidfd()
	return nil
}

// awaitRunning polls `runsc state` until the restored sandbox runs: an
// exec before that finds no sandbox.
func (i *instance) awaitRunning(ctx context.Context) error {
	deadline := time.Now().Add(restoreWait)
	for {
		select {
		case <-i.exited:
			return fmt.Errorf("%w: %s restore ended%s", sandbox.ErrUnavailable, i.rt.kind, i.diagnostics())
		default:
		}
		out, err := i.rt.output(ctx, "state", i.id)
		if err == nil && bytes.Contains(out, []byte(`"running"`)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: the restored sandbox did not run within %s", sandbox.ErrUnavailable, restoreWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// maxCheckpointMeta caps the record read back.
const maxCheckpointMeta = 64 << 10

// RestoreSession implements sandbox.RestoreRuntime: a held sandbox restored
// from the checkpoint in dir, under a new id, with a bundle built for opts
// (the snapshot's image and limits) and the snapshot's process uids.
func (r *Runtime) RestoreSession(ctx context.Context, opts sandbox.PrepareOptions, dir string) (sandbox.SessionInstance, error) {
	if err := r.checkpointUnsupported(); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, checkpointMetaFile))
	if err != nil {
		return nil, fmt.Errorf("%w: memory snapshot: %v", api.ErrNotFound, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCheckpointMeta))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("memory snapshot: %w", err)
	}
	var meta checkpointMeta
	if err := json.Unmarshal(b, &meta); err != nil || meta.Rootfs == "" || meta.InitUID <= 0 || meta.JobUID <= 0 {
		return nil, fmt.Errorf("memory snapshot: unreadable record %s", checkpointMetaFile)
	}
	meta.dir = dir
	inst, err := r.prepareFrom(ctx, opts, true, &meta)
	if err != nil {
		return nil, err
	}
	return newSessionInstance(inst), nil
}

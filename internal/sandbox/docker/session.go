package docker

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// PrepareSession implements sandbox.SessionRuntime: a container like
// Prepare's whose init holds it (aster-init -hold -serve-execs). A command
// runs over an exec channel of the holder's attach stream (the holder forks
// it, as on oci: no engine call); a job of the file API, a terminal or one
// with egress is a further aster-init started by an engine exec with the
// container's own user, capabilities and seccomp profile.
func (r *Runtime) PrepareSession(ctx context.Context, opts sandbox.PrepareOptions) (sandbox.SessionInstance, error) {
	inst, err := r.prepare(ctx, opts, true)
	if err != nil {
		return nil, err
	}
	return &sessionInstance{inst: inst}, nil
}

type sessionInstance struct{ inst *instance }

func (s *sessionInstance) ID() string                      { return s.inst.id }
func (s *sessionInstance) Done() <-chan struct{}           { return s.inst.exited }
func (s *sessionInstance) Close(ctx context.Context) error { return s.inst.Close(ctx) }

// Exec implements sandbox.SessionInstance.
func (s *sessionInstance) Exec(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	i := s.inst
	fail := func(err error) (sandbox.Result, error) { return runtimekit.ExecFailed(i.id, "docker", err) }
	select {
	case <-i.exited:
		return fail(fmt.Errorf("%w: the session's container has ended", sandbox.ErrSessionGone))
	default:
	}
	if i.mux != nil && runtimekit.ChannelJob(job) {
		return i.execChannel(ctx, job)
	}
	created, err := i.rt.api.ExecCreate(ctx, i.id, client.ExecCreateOptions{
		User:         InitStartUser,
		Cmd:          []string{InitMountPath, i.ident.Flag(), "-linger=" + initLinger.String()},
		Env:          []string{},
		WorkingDir:   "/work",
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return fail(classify("create exec", err))
	}
	attached, err := i.rt.api.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return fail(classify("start exec", err))
	}
	conn := attached.HijackedResponse
	defer conn.Close()
	pr, pw := io.Pipe()
	log := runtimekit.NewLockedCapture(8 << 10)
	exited := make(chan struct{})
	go func() {
		_, err := stdcopy.StdCopy(pw, log, conn.Reader)
		pw.CloseWithError(err)
		close(exited)
	}()
	diag := func() string {
		if out := log.String(); out != "" {
			return " (" + out + ")"
		}
		return ""
	}
	return runtimekit.RunExec(ctx, job, runtimekit.ExecParts{
		ID:             i.id,
		Runtime:        "docker",
		W:              closeWriter{conn},
		R:              initproto.NewReader(pr),
		Exited:         exited,
		Kill:           func() { conn.Close() },
		DestroySandbox: func() { i.Close(context.Background()) },
		Cgroup:         i.cgroup,
		Diagnostics:    diag,
	})
}

// serveExecs starts the host's side of the holder's exec channels over the
// container's attach stream. A holder that breaks the channel protocol is not
// to be trusted: the container is removed.
func (i *instance) serveExecs() {
	i.mux = runtimekit.NewExecMux(i.conn.Conn, i.frames)
	go func() {
		<-i.mux.Done()
		if err := i.mux.Err(); err != nil && !i.destroyed.Load() {
			i.rt.log.Warn("session holder broke its protocol; destroying the session", "container", i.id, "error", err)
			i.Close(context.Background())
		}
	}()
}

// execChannel runs job over a new exec channel of the holder. The verdict is
// RunExec's, as for an engine exec: init's report, the OOM kills counted in
// the container's cgroup, the host's own deadline; an exec that does not end
// when its channel is closed ends the session.
func (i *instance) execChannel(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	return i.mux.Run(ctx, job, runtimekit.ExecParts{
		ID:             i.id,
		Runtime:        "docker",
		DestroySandbox: func() { i.Close(context.Background()) },
		Cgroup:         i.cgroup,
	})
}

// closeWriter writes to an exec's stdin; Close half-closes the connection,
// which the engine passes on as the exec's stdin EOF.
type closeWriter struct{ c client.HijackedResponse }

func (w closeWriter) Write(p []byte) (int, error) { return w.c.Conn.Write(p) }
func (w closeWriter) Close() error                { return w.c.CloseWrite() }

// Pause implements sandbox.Pauser: the engine freezes the container's cgroup.
func (s *sessionInstance) Pause(ctx context.Context) error {
	if _, err := s.inst.rt.api.ContainerPause(ctx, s.inst.id, client.ContainerPauseOptions{}); err != nil {
		return classify("pause", err)
	}
	return s.waitPaused(ctx, true)
}

// Resume implements sandbox.Pauser. The engine thaws the cgroup before it
// answers but records the container as running only when containerd's event
// reaches it, and refuses an exec until then: Resume returns once the engine
// says so.
func (s *sessionInstance) Resume(ctx context.Context) error {
	api := s.inst.rt.api
	if _, err := api.ContainerUnpause(ctx, s.inst.id, client.ContainerUnpauseOptions{}); err != nil {
		return classify("resume", err)
	}
	return s.waitPaused(ctx, false)
}

// waitPaused waits, a few seconds at most, until the engine reports the
// container paused (or not).
func (s *sessionInstance) waitPaused(ctx context.Context, want bool) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		got, err := s.inst.rt.api.ContainerInspect(ctx, s.inst.id, client.ContainerInspectOptions{})
		switch {
		case err != nil:
			return classify("inspect", err)
		case got.Container.State != nil && got.Container.State.Paused == want:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: the engine does not report the container paused=%v", sandbox.ErrUnavailable, want)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

package docker

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// helloTimeout bounds how long a started sandbox may take to show that
// aster-init is up.
const helloTimeout = 30 * time.Second

// removeTimeout bounds each force-remove, which runs on a context detached from
// the request so that a cancelled request still cleans up.
const removeTimeout = 30 * time.Second

// Prepare implements sandbox.Runtime: create → attach → wait registered →
// start → hello. On any failure after create the container is force-removed.
func (r *Runtime) Prepare(ctx context.Context, opts sandbox.PrepareOptions) (sandbox.Instance, error) {
	inst, err := r.prepare(ctx, opts, false)
	if err != nil {
		return nil, err
	}
	return inst, nil
}

// prepare is Prepare; hold makes a session sandbox (session.go), whose init
// runs no job itself.
func (r *Runtime) prepare(ctx context.Context, opts sandbox.PrepareOptions, hold bool) (_ *instance, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err // Docker reads a memory or pids limit of 0 as unlimited
	}
	t0 := time.Now()
	ident, err := r.ids.Acquire()
	if err != nil {
		return nil, err
	}
	cfg, host := r.containerConfig(opts, ident)
	if hold {
		cfg.Cmd = []string{ident.Flag(), "-hold"}
		if !r.opts.SessionEngineExecs {
			cfg.Cmd = append(cfg.Cmd, "-serve-execs")
		}
	}
	created, err := r.api.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	if err != nil {
		ident.Release()
		return nil, classify("create container", err)
	}
	inst := &instance{rt: r, id: created.ID, ident: ident, exited: make(chan struct{})}
	inst.SetTiming("create", time.Since(t0))
	defer func() {
		if err != nil {
			inst.Close(context.WithoutCancel(ctx))
		}
	}()

	attached, err := r.api.ContainerAttach(ctx, created.ID, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, classify("attach container", err)
	}
	inst.conn = attached.HijackedResponse

	// Register the wait before start, on a context that outlives the request,
	// so the exit is seen however the run ends. With AutoRemove the container
	// is gone once "removed" fires.
	wait := r.api.ContainerWait(context.WithoutCancel(ctx), created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionRemoved})
	inst.waiting = true
	go inst.watch(wait)

	// Demultiplex the attach stream: stdout carries init's frames, stderr its
	// own diagnostics (capped).
	pr, pw := io.Pipe()
	inst.initLog = runtimekit.NewLockedCapture(16 << 10)
	go func() {
		_, err := stdcopy.StdCopy(pw, inst.initLog, attached.Reader)
		pw.CloseWithError(err)
	}()
	inst.frames = initproto.NewReader(pr)

	t1 := time.Now()
	if _, err := r.api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return nil, classify("start container", err)
	}
	inst.SetTiming("start", time.Since(t1))

	t2 := time.Now()
	if err := inst.awaitHello(ctx); err != nil {
		return nil, err
	}
	inst.SetTiming("init", time.Since(t2))
	inst.cgroup = r.cgroupDir(ctx, created.ID)
	if hold && inst.holdsExecs {
		inst.serveExecs()
	}
	return inst, nil
}

// instance is one prepared container.
type instance struct {
	rt    *Runtime
	id    string
	ident runtimekit.Identity
	// cgroup is the host directory of the container's memory cgroup, "" when
	// the host cannot read it.
	cgroup    string
	destroyed atomic.Bool // the host removed it (so a SIGKILLed init is no OOM)
	conn      client.HijackedResponse
	frames    *initproto.Reader
	initLog   *runtimekit.LockedCapture
	exited    chan struct{}
	exit      container.WaitResponse
	// holdsExecs: init is a session holder that serves execs itself over
	// channels of its attach stream (its hello said so); mux, once
	// PrepareSession started it, reaches them.
	holdsExecs bool
	mux        *runtimekit.ExecMux
	runtimekit.InstanceState

	waiting bool // a wait for removal is registered; exited will close
}

func (i *instance) ID() string { return i.id }

func (i *instance) watch(wait client.ContainerWaitResult) {
	defer close(i.exited)
	select {
	case res := <-wait.Result:
		i.exit = res
	case <-wait.Error:
	}
}

func (i *instance) awaitHello(ctx context.Context) error {
	h, err := runtimekit.AwaitHelloFrame(ctx, i.frames, helloTimeout, i.initDiagnostics)
	i.holdsExecs = h.Execs
	return err
}

func (i *instance) initDiagnostics() string {
	out := i.initLog.String()
	if out == "" {
		return ""
	}
	return " (" + out + ")"
}

// Run implements sandbox.Instance.
func (i *instance) Run(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	return i.RunOnce(ctx, job, runtimekit.RunParts{
		ID:          i.id,
		Runtime:     "docker",
		W:           i.conn.Conn,
		R:           i.frames,
		Destroy:     func() { i.Close(context.WithoutCancel(ctx)) },
		Exited:      i.exited,
		HostOOM:     i.hostOOM,
		Diagnostics: i.initDiagnostics,
	})
}

// hostOOM implements runtimekit.Session.HostOOM from the container's cgroup
// and, once it is gone, its exit status.
func (i *instance) hostOOM(bool) (int64, bool) {
	return runtimekit.CgroupHostOOM(i.cgroup, i.exited, func() bool {
		return i.exit.StatusCode == 128+9 && !i.destroyed.Load()
	})
}

// Close implements sandbox.Instance: force-remove, on a detached context.
func (i *instance) Close(ctx context.Context) error {
	return i.CloseOnce(func() (closeErr error) {
		defer i.ident.Release()
		i.destroyed.Store(true)
		if i.conn.Conn != nil {
			i.conn.Close()
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		closeErr = i.rt.Remove(rctx, i.id)
		if closeErr != nil {
			i.rt.log.Warn("remove sandbox container", "container", i.id, "err", closeErr)
		} else if i.waiting {
			// With AutoRemove the engine may still be removing it; wait until
			// it is gone so a freed slot never shows as one container too many.
			select {
			case <-i.exited:
			case <-rctx.Done():
			}
		}
		return closeErr
	})
}

// Done is closed once the container is gone; the warm pool uses it to skip a
// pooled sandbox that died while waiting (an engine restart, say).
func (i *instance) Done() <-chan struct{} { return i.exited }

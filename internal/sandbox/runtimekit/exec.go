package runtimekit

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/cgroupstat"
	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
)

// ExecGrace is how long an exec whose host side was closed (deadline,
// cancellation, runaway output) may take to end before the host stops
// trusting the sandbox and destroys the whole session.
const ExecGrace = 5 * time.Second

// ExecParts is one job of a session sandbox: a further aster-init the
// runtime started inside the held sandbox (`crun exec`, `docker exec`), whose
// stdio are W and R. The job then goes through the same Session as a
// one-shot run, so its verdict is built the same way.
type ExecParts struct {
	// ID and Runtime fill Result.ID and Result.Runtime.
	ID, Runtime string
	// W carries frames to the exec's init; closing it tells that init the
	// host is gone (it ends its job and exits).
	W io.WriteCloser
	// R carries the exec's frames.
	R *initproto.Reader
	// Exited is closed when the exec process has ended.
	Exited <-chan struct{}
	// Kill ends the exec's runtime client, if it has one, once its init was
	// told to end and did not.
	Kill func()
	// DestroySandbox ends the whole session: an exec that does not end when
	// told to means the sandbox is not to be trusted any more.
	DestroySandbox func()
	// Cgroup is the host directory of the sandbox's memory cgroup, "" when
	// the host cannot read it. The OOM verdict of an exec is the cgroup's
	// kills during the exec (under concurrent execs of one session, a kill
	// during the exec's life).
	Cgroup string
	// SandboxOOM, when set, says whether the whole sandbox ended in an OOM
	// kill (as RunParts.HostOOM once it is gone), for an exec that ended
	// with its sandbox after the cgroup was removed: an exec channel ends
	// when its holder does.
	SandboxOOM func() (int64, bool)
	// Diagnostics, as in RunParts.
	Diagnostics func() string
}

// ExecFailed is the Result, and err, of a session exec of the sandbox id on
// runtime that could not start: status error, exit code -1.
func ExecFailed(id, runtime string, err error) (sandbox.Result, error) {
	return sandbox.Result{ID: id, Runtime: runtime, Status: sandbox.StatusError, ExitCode: -1, Error: err.Error()}, err
}

// HelloTimeout bounds how long an exec's init may take to say hello.
const HelloTimeout = 30 * time.Second

// RunExec drives job through the exec described by p and returns its
// Result. The exec's host side is closed before it returns.
func RunExec(ctx context.Context, job sandbox.Job, p ExecParts) (sandbox.Result, error) {
	t0 := time.Now()
	oomBefore, haveOOM := int64(0), false
	if p.Cgroup != "" {
		oomBefore, haveOOM = cgroupstat.OOMKills(p.Cgroup)
	}
	var closeOnce sync.Once
	closeW := func() {
		closeOnce.Do(func() {
			p.W.Close()
			go func() {
				t := time.NewTimer(ExecGrace)
				defer t.Stop()
				select {
				case <-p.Exited:
				case <-t.C:
					if p.Kill != nil {
						p.Kill()
					}
					p.DestroySandbox()
				}
			}()
		})
	}
	defer closeW()
	timings := map[string]time.Duration{}
	if err := AwaitHello(ctx, p.R, HelloTimeout, p.Diagnostics); err != nil {
		res := errorResult(sandbox.Result{ID: p.ID, Runtime: p.Runtime, ExitCode: -1}, err)
		return res, err
	}
	timings["start"] = time.Since(t0)
	sess := &Session{
		W:         p.W,
		R:         p.R,
		Destroy:   closeW,
		Exited:    p.Exited,
		HelloSeen: true,
	}
	if haveOOM || p.SandboxOOM != nil {
		sess.HostOOM = func(ended bool) (int64, bool) {
			if haveOOM {
				if n, ok := cgroupstat.OOMKills(p.Cgroup); ok {
					return max(n-oomBefore, 0), true
				}
			}
			if ended && p.SandboxOOM != nil {
				return p.SandboxOOM()
			}
			return 0, false
		}
	}
	t1 := time.Now()
	res, err := sess.Run(ctx, job)
	timings["job"] = time.Since(t1)
	res.ID = p.ID
	res.Runtime = p.Runtime
	res.Timings = timings
	if p.Diagnostics != nil && res.Status == sandbox.StatusError && res.Error != "" {
		res.Error += p.Diagnostics()
	}
	return res, err
}

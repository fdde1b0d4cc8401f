package microvm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// Sessions on the microvm runtime. A session is one VM booted like a
// one-shot run's (the same kernel, disk, cgroups, QEMU line and guest
// mounts), except that the guest's aster-init, PID 1 of the VM, is started
// with -hold -serve-execs: it holds the VM and serves every call of the
// session — commands, file operations and archives (a workspace or an
// export), terminals, egress — as a channel of its one virtio-serial port
// (initproto.TypeChan). Each channel carries the one-shot protocol of one
// job, which the holder forks exactly as a one-shot init forks its job: the
// seccomp trampoline, the job uid, a process session of its own. No further
// process is ever started in the guest from outside: the port is the VM's
// only way in, as it is for a one-shot run.

var (
	_ sandbox.SessionRuntime  = (*Runtime)(nil)
	_ sandbox.SessionInstance = (*sessionInstance)(nil)
	_ sandbox.Pauser          = (*sessionInstance)(nil)
)

// PrepareSession implements sandbox.SessionRuntime: a VM whose init holds it
// and serves its execs. On any failure the VM and its state are removed.
func (r *Runtime) PrepareSession(ctx context.Context, opts sandbox.PrepareOptions) (sandbox.SessionInstance, error) {
	inst, err := r.prepare(ctx, opts, true)
	if err != nil {
		return nil, err
	}
	s := &sessionInstance{i: inst, mux: runtimekit.NewExecMux(inst.conn, inst.frames)}
	go func() {
		// A holder that broke the channel protocol is not to be trusted:
		// the VM is destroyed, and the session ends with it.
		<-s.mux.Done()
		// Close closes the host's end of the port first: that is no fault
		// of the holder's.
		if err := s.mux.Err(); err != nil && !errors.Is(err, net.ErrClosed) {
			r.log.Warn("session holder broke its protocol; destroying the session", "sandbox", inst.id, "error", err)
			inst.destroy()
		}
	}()
	return s, nil
}

// sessionInstance is a session's VM and the host's side of its channels.
type sessionInstance struct {
	i   *instance
	mux *runtimekit.ExecMux
}

func (s *sessionInstance) ID() string { return s.i.id }

// Done is closed once QEMU has exited: the VM is gone, with every process
// of the session.
func (s *sessionInstance) Done() <-chan struct{} { return s.i.exited }

// Close implements sandbox.SessionInstance: QEMU is killed (thawed first if
// paused), its cgroup, record and port go; nothing of the session is left
// on the host (the VM's disk is the shared image, opened read-only; /work
// and /tmp were guest memory).
func (s *sessionInstance) Close(ctx context.Context) error { return s.i.Close(ctx) }

// sandboxOOMWait bounds how long an exec whose channel ended without a
// result waits for QEMU to exit, to read on the console whether the
// guest's OOM killer took init (which ends the VM).
const sandboxOOMWait = 3 * time.Second

// Exec implements sandbox.SessionInstance: job runs on a new channel of the
// VM's port, driven by runtimekit.RunExec as every runtime's execs are.
//
// The verdict is built as a one-shot microvm run's: the host's own deadline
// and output ceiling, and init's report — here the holder's, which counts
// the guest cgroup's OOM kills during the exec (the host cannot read the
// guest's cgroups; the guest kernel and its init are the VM's, out of the
// job's reach as in a one-shot run). An exec whose channel ends without a
// result because the VM died is `oom` when the guest's OOM killer took init
// (the console says so), as a one-shot run's is.
func (s *sessionInstance) Exec(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	i := s.i
	select {
	case <-i.exited:
		return runtimekit.ExecFailed(i.id, i.rt.Name(), fmt.Errorf("%w: the session's VM has ended", sandbox.ErrSessionGone))
	default:
	}
	return s.mux.Run(ctx, job, runtimekit.ExecParts{
		ID:             i.id,
		Runtime:        i.rt.Name(),
		DestroySandbox: i.destroy,
		SandboxOOM: func() (int64, bool) {
			waitExited(i.exited, sandboxOOMWait)
			return i.hostOOM(true)
		},
		Diagnostics: func() string {
			// The console says something only about a VM that ended; an
			// exec's own error (a refused workspace, say) waits for nothing.
			select {
			case <-i.exited:
				return i.diagnostics()
			default:
				return ""
			}
		},
	})
}

// Pause implements sandbox.Pauser: the host cgroup's freezer stops every
// thread of QEMU, so the guest gets no CPU and keeps its memory. Whether the
// guest's clock moves on by the pause depends on its clocksource: the TSC
// (the host's, under TCG) does; timer interrupts, which a frozen VM does
// not get, do not.
func (s *sessionInstance) Pause(ctx context.Context) error {
	if err := s.i.cg.freeze(ctx, true); err != nil {
		if errors.Is(err, errNoFreezer) {
			return fmt.Errorf("%w: %v", sandbox.ErrPauseUnsupported, err)
		}
		return err
	}
	return nil
}

// Resume implements sandbox.Pauser.
func (s *sessionInstance) Resume(ctx context.Context) error {
	return s.i.cg.freeze(ctx, false)
}

func waitExited(ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

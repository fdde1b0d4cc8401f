package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// execProcessFile is the process.json of a session's execs, in its bundle.
const execProcessFile = "exec.json"

// writeExecProcess writes the process every exec of a session starts with:
// the sandbox's own init process (its user, capabilities, rlimits, AppArmor
// profile, no_new_privileges), running aster-init in its one-shot mode.
func writeExecProcess(dir string, spec *specs.Spec) error {
	p := *spec.Process
	p.Args = append([]string(nil), spec.Process.Args...)
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, execProcessFile), b, 0o600)
}

// PrepareSession implements sandbox.SessionRuntime: a sandbox like Prepare's
// whose init holds it (aster-init -hold), and whose jobs are each a further
// aster-init started by `<runtime> exec`. gVisor's runsc takes the same
// process.json, so a gvisor runtime holds sessions too.
func (r *Runtime) PrepareSession(ctx context.Context, opts sandbox.PrepareOptions) (sandbox.SessionInstance, error) {
	inst, err := r.prepare(ctx, opts, true)
	if err != nil {
		return nil, err
	}
	return newSessionInstance(inst), nil
}

// sessionInstance is a held sandbox of this runtime. A memory snapshot
// (checkpoint.go) replaces its instance with the sandbox restored under the
// same id; Done is closed only when the current one ends otherwise.
type sessionInstance struct {
	mu   sync.Mutex
	inst *instance
	swap chan struct{} // while a checkpoint replaces inst; closed after
	done chan struct{}
}

func newSessionInstance(inst *instance) *sessionInstance {
	s := &sessionInstance{inst: inst, done: make(chan struct{})}
	go s.watch()
	return s
}

// current is the sandbox the session runs in now.
func (s *sessionInstance) current() *instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inst
}

// watch closes done when the current sandbox ends other than by a
// checkpoint that replaces it.
func (s *sessionInstance) watch() {
	for {
		i := s.current()
		<-i.exited
		s.mu.Lock()
		swap := s.swap
		if swap == nil && s.inst == i {
			close(s.done)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if swap != nil {
			<-swap
		}
	}
}

func (s *sessionInstance) ID() string                      { return s.current().id }
func (s *sessionInstance) Done() <-chan struct{}           { return s.done }
func (s *sessionInstance) Close(ctx context.Context) error { return s.current().Close(ctx) }

// Exec implements sandbox.SessionInstance: `<runtime> exec --process
// exec.json`, with pipes as the exec's stdio, driven by runtimekit.RunExec.
func (s *sessionInstance) Exec(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	i := s.current()
	fail := func(err error) (sandbox.Result, error) { return runtimekit.ExecFailed(i.id, i.rt.Name(), err) }
	select {
	case <-i.exited:
		return fail(fmt.Errorf("%w: the session's sandbox has ended", sandbox.ErrSessionGone))
	default:
	}
	if i.mux != nil && runtimekit.ChannelJob(job) {
		return i.execChannel(ctx, job)
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return fail(err)
	}
	log := runtimekit.NewCapture(8 << 10)
	cmd := i.rt.command(context.Background(), "exec", "--process", filepath.Join(i.dir, execProcessFile), i.id)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, log
	err = i.rt.launch.start(cmd)
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		return fail(fmt.Errorf("%w: %s exec: %v", sandbox.ErrUnavailable, i.rt.kind, err))
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	diag := func() string {
		<-waitOrTimeout(exited)
		if out := strings.TrimSpace(string(log.Output().Data)); out != "" {
			return " (" + out + ")"
		}
		return ""
	}
	defer stdoutR.Close()
	return runtimekit.RunExec(ctx, job, runtimekit.ExecParts{
		ID:             i.id,
		Runtime:        i.rt.Name(),
		W:              stdinW,
		R:              initproto.NewReader(stdoutR),
		Exited:         exited,
		Kill:           func() { _ = cmd.Process.Kill() },
		DestroySandbox: i.destroy,
		Cgroup:         i.cgroup,
		Diagnostics:    diag,
	})
}

// serveExecs starts the host's side of the holder's exec channels (its
// hello said it serves them). A holder that breaks the channel protocol is
// not to be trusted: the sandbox is destroyed.
func (i *instance) serveExecs() {
	i.mux = runtimekit.NewExecMux(i.stdin, i.frames)
	go func() {
		<-i.mux.Done()
		if err := i.mux.Err(); err != nil {
			i.rt.log.Warn("session holder broke its protocol; destroying the session", "sandbox", i.id, "error", err)
			i.destroy()
		}
	}()
}

// execChannel runs job over a new exec channel of the holder: no runtime
// process, no further init. The verdict is RunExec's, as for `<runtime>
// exec`: init's report, the OOM kills counted in the sandbox's cgroup, the
// host's own deadline; an exec that does not end when its channel is closed
// ends the session.
func (i *instance) execChannel(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	return i.mux.Run(ctx, job, runtimekit.ExecParts{
		ID:             i.id,
		Runtime:        i.rt.Name(),
		DestroySandbox: i.destroy,
		Cgroup:         i.cgroup,
		SandboxOOM: func() (int64, bool) {
			waitClosed(i.exited, 3e9)
			return i.hostOOM(true)
		},
	})
}

// waitOrTimeout returns a channel closed when ch is or after a second.
func waitOrTimeout(ch <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		defer close(out)
		waitClosed(ch, 1e9)
	}()
	return out
}

// Pause implements sandbox.Pauser: `<runtime> pause` freezes the sandbox's
// cgroup (runsc stops its sandbox's threads).
func (s *sessionInstance) Pause(ctx context.Context) error {
	i := s.current()
	if out, err := i.rt.output(ctx, "pause", i.id); err != nil {
		return fmt.Errorf("%s pause: %v: %s", i.rt.kind, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Resume implements sandbox.Pauser.
func (s *sessionInstance) Resume(ctx context.Context) error {
	i := s.current()
	if out, err := i.rt.output(ctx, "resume", i.id); err != nil {
		return fmt.Errorf("%s resume: %v: %s", i.rt.kind, err, strings.TrimSpace(string(out)))
	}
	return nil
}

package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/cgroupstat"
	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// helloTimeout bounds how long a started sandbox may take to show that
// aster-init is up.
const helloTimeout = 30 * time.Second

// exitWait is how long Close waits for the runtime process to end on its own
// (init exits after its result, or on stdin EOF) before killing the sandbox.
const exitWait = 2 * time.Second

// killWait bounds the wait for the runtime process after a SIGKILL.
const killWait = 10 * time.Second

// Prepare implements sandbox.Runtime: write the bundle, start `<runtime> run`
// with pipes as the sandbox's stdio, and wait for aster-init's hello. On any
// failure the sandbox and its state are removed.
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
	return r.prepareFrom(ctx, opts, hold, nil)
}

// prepareFrom is prepare; from, when set, restores a held sandbox from a
// checkpoint (checkpoint.go) instead of starting one.
func (r *Runtime) prepareFrom(ctx context.Context, opts sandbox.PrepareOptions, hold bool, from *checkpointMeta) (_ *instance, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err // a tmpfs of size=0 is unbounded; a pids or quota of 0 means "no limit"
	}
	if r.rootless {
		return nil, r.Check(ctx)
	}
	id := opts.RunID
	if id == "" {
		id = sandbox.NewRunID()
	}
	if !validID.MatchString(id) {
		return nil, sandbox.Invalidf("run id %q is not a valid container id", id)
	}
	t0 := time.Now()
	rootfs, err := r.images.rootfs(ctx, opts.Image)
	if err != nil {
		return nil, err
	}
	dir := r.runDir(id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create bundle: %w", err)
	}
	ident, err := r.ids.Acquire()
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	inst := &instance{rt: r, id: id, dir: dir, ident: ident, pidfd: -1, exited: make(chan struct{}),
		cgroup: cgroupstat.MemoryDir("/aster/" + id), procs: checkpointMeta{Rootfs: rootfs, InitUID: ident.Init, JobUID: ident.Job}}
	defer func() {
		if err != nil {
			inst.Close(context.WithoutCancel(ctx))
		}
	}()
	rec := record{ID: id, RunID: opts.RunID, Deadline: opts.Deadline, Created: t0, Runtime: r.kind}
	if err := writeRecord(dir, rec); err != nil {
		return nil, fmt.Errorf("create bundle: %w", err)
	}
	specIdent := ident
	if from != nil {
		if rootfs != from.Rootfs {
			return nil, fmt.Errorf("%w: image %s has changed since the memory snapshot was taken; take a new one", sandbox.ErrInvalidSpec, opts.Image)
		}
		// The restored processes keep the uids they ran as; a gVisor
		// sandbox's uids live in its own kernel, never on the host.
		specIdent = runtimekit.Identity{Init: from.InitUID, Job: from.JobUID}
		inst.procs.InitUID, inst.procs.JobUID = from.InitUID, from.JobUID
	}
	spec := r.bundleSpec(opts, specIdent, id, rootfs)
	if hold {
		if err := writeExecProcess(dir, spec); err != nil {
			return nil, fmt.Errorf("create bundle: %w", err)
		}
		spec.Process.Args = []string{InitMountPath, ident.Flag(), "-hold"}
		if !r.opts.SessionRuntimeExecs {
			spec.Process.Args = append(spec.Process.Args, "-serve-execs")
		}
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("create bundle: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, configFile), b, 0o600); err != nil {
		return nil, fmt.Errorf("create bundle: %w", err)
	}
	if r.kind == "runsc" && spec.Linux.Resources != nil && spec.Linux.Resources.Pids != nil {
		if inst.pidsCgroup, err = createGVisorPidsCgroup(id, *spec.Linux.Resources.Pids.Limit); err != nil {
			return nil, err
		}
	}
	inst.SetTiming("create", time.Since(t0))

	if from != nil {
		if err := inst.restore(ctx, from.dir); err != nil {
			return nil, err
		}
		r.learnSeccomp(id)
		return inst, nil
	}
	if err := inst.start(""); err != nil {
		return nil, err
	}
	t2 := time.Now()
	if err := inst.awaitHello(ctx); err != nil {
		return nil, err
	}
	inst.SetTiming("init", time.Since(t2))
	if hold && inst.holdsExecs {
		inst.serveExecs()
	}
	inst.openPidfd()
	r.learnSeccomp(id)
	return inst, nil
}

// instance is one prepared sandbox: a `<runtime> run` process whose stdio are
// the frame streams of aster-init.
type instance struct {
	rt    *Runtime
	id    string
	dir   string
	ident runtimekit.Identity
	// cgroup is the host directory of the sandbox's memory cgroup.
	cgroup string
	// pidsCgroup is the host directory of a gVisor sandbox's pids cgroup when
	// Aster made it (see createGVisorPidsCgroup), else "".
	pidsCgroup string
	// procs is what a checkpoint of this sandbox records for a restore:
	// its root filesystem and the uids its processes run as.
	procs     checkpointMeta
	destroyed atomic.Bool // the host killed it (so a SIGKILLed init is no OOM)

	cmd     *os.Process
	stdin   *os.File // host end: frames to init
	stdout  *os.File // host end: frames from init
	frames  *initproto.Reader
	initLog *runtimekit.Capture
	logDone chan struct{}
	exited  chan struct{}
	exitErr error

	// holdsExecs: init is a session holder that serves execs itself (its
	// hello said so); mux, once PrepareSession started it, reaches them.
	holdsExecs bool
	mux        *runtimekit.ExecMux

	pidMu sync.Mutex
	pidfd int // of the sandbox's init, once known; -1 before

	runtimekit.InstanceState
}

func (i *instance) ID() string { return i.id }

// start launches the runtime process with three pipes as its stdio, which it
// hands to the sandbox's init as they are (no terminal). With image set it
// restores the sandbox from that checkpoint directory (runsc) instead.
func (i *instance) start(image string) error {
	t0 := time.Now()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		stdoutR.Close()
		stdoutW.Close()
		return err
	}
	i.stdin, i.stdout = stdinW, stdoutR
	// The process outlives the request that prepared it (a pooled sandbox);
	// its end is driven by Close and destroy, not by a context.
	args := []string{"run"}
	if image != "" {
		args = []string{"restore", "--image-path", image}
	}
	cmd := i.rt.command(context.Background(), append(args, "--bundle", i.dir, "--pid-file", filepath.Join(i.dir, pidFile), i.id)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	err = i.rt.launch.start(cmd)
	// The child holds its ends now; ours would keep the streams open forever.
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stderrR.Close()
		close(i.exited)
		return fmt.Errorf("%w: start %s: %v", sandbox.ErrUnavailable, i.rt.kind, err)
	}
	i.cmd = cmd.Process
	i.initLog = runtimekit.NewCapture(16 << 10)
	i.logDone = make(chan struct{})
	go func() {
		defer close(i.logDone)
		defer stderrR.Close()
		_, _ = io.Copy(i.initLog, stderrR)
	}()
	go func() {
		i.exitErr = cmd.Wait()
		close(i.exited)
	}()
	i.frames = initproto.NewReader(stdoutR)
	i.SetTiming("start", time.Since(t0))
	return nil
}

func (i *instance) awaitHello(ctx context.Context) error {
	h, err := runtimekit.AwaitHelloFrame(ctx, i.frames, helloTimeout, i.diagnostics)
	i.holdsExecs = h.Execs
	return err
}

// diagnostics returns what the runtime and init wrote on stderr, once the
// runtime process has ended (or after a short wait), for error messages.
func (i *instance) diagnostics() string {
	select {
	case <-i.logDone:
	case <-time.After(time.Second):
	}
	note := hostPidsNote(i.pidsCgroup)
	out := i.initLog.Output()
	s := strings.TrimSpace(string(out.Data))
	if s == "" {
		return note
	}
	return note + " (" + s + ")"
}

// openPidfd pins the sandbox's init process. After hello init is alive and
// blocked on its stdin, so the pid in the pid file is certainly init's; a
// pidfd keeps a later kill from ever reaching a recycled pid.
func (i *instance) openPidfd() {
	b, err := os.ReadFile(filepath.Join(i.dir, pidFile))
	if err != nil {
		return // runc writes it after start; destroy falls back to `kill`
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	i.pidMu.Lock()
	i.pidfd = fd
	i.pidMu.Unlock()
}

// Done is closed once the sandbox is gone; the warm pool uses it to skip
// sandboxes that died while waiting.
func (i *instance) Done() <-chan struct{} { return i.exited }

// Run implements sandbox.Instance.
func (i *instance) Run(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	parts := runtimekit.RunParts{
		ID:          i.id,
		Runtime:     i.rt.Name(),
		W:           i.stdin,
		R:           i.frames,
		Destroy:     i.destroy,
		Exited:      i.exited,
		HostOOM:     i.hostOOM,
		Diagnostics: i.diagnostics,
	}
	if i.rt.kind == "runsc" {
		parts.After = i.hostCPUTime
	}
	return i.RunOnce(ctx, job, parts)
}

// hostCPUTime replaces a gVisor job's CPU time with the host's count:
// gVisor's sentry counts a task as running while the host throttles the
// sandbox to its CPU quota, so the job's own rusage overstates its CPU time;
// the host's count for the sandbox's cgroup (the sentry's own work included)
// is the true one. The cgroup is still there: init lingers until Close.
func (i *instance) hostCPUTime(res sandbox.Result, err error) (sandbox.Result, error) {
	if d, ok := cgroupstat.CPUUsage("/aster/" + i.id); ok {
		res.CPUTime = d
	}
	return res, err
}

// hostOOM implements runtimekit.Session.HostOOM from the sandbox's cgroup and,
// once it is gone, how its runtime process ended.
func (i *instance) hostOOM(bool) (int64, bool) {
	return runtimekit.CgroupHostOOM(i.cgroup, i.exited, func() bool {
		var ee *exec.ExitError
		return errors.As(i.exitErr, &ee) && ee.ExitCode() == 128+9 && !i.destroyed.Load()
	})
}

// destroy kills the sandbox now: SIGKILL to its init ends the whole PID
// namespace, and the runtime process then cleans up and exits.
func (i *instance) destroy() {
	i.destroyed.Store(true)
	select {
	case <-i.exited:
		return
	default:
	}
	// Signal under the lock: Close closes the pidfd under it, and a closed
	// descriptor's number may already name another sandbox's pidfd.
	i.pidMu.Lock()
	sent := i.pidfd >= 0 && unix.PidfdSendSignal(i.pidfd, unix.SIGKILL, nil, 0) == nil
	i.pidMu.Unlock()
	if sent {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	if _, err := i.rt.output(ctx, "kill", i.id, "KILL"); err != nil && i.cmd != nil {
		// Not created yet, or the runtime is wedged: end the runtime process;
		// Close deletes whatever it left.
		_ = i.cmd.Kill()
	}
}

// Close implements sandbox.Instance. Closing stdin tells an idle init to exit
// (a pooled sandbox) and a finished one is already exiting; anything still
// running after a short wait is killed. Then the runtime's state and the
// bundle are removed.
func (i *instance) Close(ctx context.Context) error {
	return i.CloseOnce(func() (closeErr error) {
		defer i.ident.Release()
		if i.stdin != nil {
			i.stdin.Close()
		}
		if !waitClosed(i.exited, exitWait) {
			i.destroy()
			if !waitClosed(i.exited, killWait) && i.cmd != nil {
				_ = i.cmd.Kill()
				waitClosed(i.exited, killWait)
			}
		}
		if i.stdout != nil {
			i.stdout.Close()
		}
		i.pidMu.Lock()
		if i.pidfd >= 0 {
			unix.Close(i.pidfd)
			i.pidfd = -1
		}
		i.pidMu.Unlock()
		// `run` deletes the container when it exits normally; after a kill of
		// the runtime process itself, state may remain.
		if i.rt.hasState(i.id) {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killWait)
			if out, err := i.rt.output(rctx, "delete", "--force", i.id); err != nil && !notExist(out) {
				closeErr = fmt.Errorf("delete container: %v: %s", err, strings.TrimSpace(string(out)))
			}
			cancel()
		}
		if err := os.RemoveAll(i.dir); err != nil && closeErr == nil {
			closeErr = fmt.Errorf("remove bundle: %w", err)
		}
		if i.pidsCgroup != "" {
			if err := removeGVisorPidsCgroup(i.id); err != nil && closeErr == nil {
				closeErr = err
			}
		}
		if closeErr != nil {
			i.rt.log.Warn("remove sandbox", "sandbox", i.id, "err", closeErr)
		}
		return closeErr
	})
}

func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/workspace"
)

type agent struct {
	in      *initproto.Reader
	out     *initproto.Writer
	workDir string
	pid1    bool
	// linger is how long init waits, after the result, for the host to close
	// stdin before it exits (0: exit at once).
	linger time.Duration
	// id is who init and the job run as.
	id identity
	// seccomp: the job's trampoline installs the seccomp profile itself.
	seccomp bool
	// direct, when not nil, starts the job without the trampoline.
	direct *directStart

	hostGone atomic.Bool
	// proxy is the CONNECT proxy of a run with egress, while the job runs.
	proxy *egressProxy
	// inputDone is closed when stdin ends, once the job has started.
	inputDone chan struct{}
	// pty is the master of the job's terminal, in a job with one.
	pty *os.File
	// jobs, in a session's holder serving an exec, is the holder's reaper:
	// other execs' jobs are children of the same process, so this exec
	// neither reaps nor signals anything but its own job, and keeps the
	// holder's capabilities for the next exec.
	jobs *reaper
}

// maxHelloRequests bounds the hello requests a host may send before the job.
const maxHelloRequests = 10000

// run executes one job and returns init's own exit code.
func (a *agent) run() int {
	hello, _ := json.Marshal(initproto.Hello{Version: initproto.Version, PID: os.Getpid()})
	if err := a.out.WriteFrame(initproto.TypeHello, hello); err != nil {
		return 1
	}
	f, err := a.in.Next()
	// Hello requests: the host learns that it is attached by the answers.
	for n := 0; err == nil && f.Type == initproto.TypeHello && n < maxHelloRequests; n++ {
		if err := a.answerHello(f.Payload); err != nil {
			return 1
		}
		f, err = a.in.Next()
	}
	if err != nil {
		// The host went away before sending a job (a pooled sandbox being
		// discarded, or a host crash). Nothing to report.
		return 0
	}
	if f.Type != initproto.TypeJob {
		return a.finish(initproto.ResultFrame{ExitCode: -1, SetupError: fmt.Sprintf("first frame is %s, want job", f.Type)})
	}
	var job initproto.JobHeader
	if err := json.Unmarshal(f.Payload, &job); err != nil {
		return a.finish(initproto.ResultFrame{ExitCode: -1, SetupError: "job header: " + err.Error()})
	}
	if err := job.Validate(); err != nil {
		return a.finish(initproto.ResultFrame{ExitCode: -1, SetupError: "job header: " + err.Error()})
	}
	if job.Workspace {
		if err := a.unpack(job); err != nil {
			return a.finish(initproto.ResultFrame{ExitCode: -1, SetupError: "workspace: " + err.Error()})
		}
	}
	res := a.execute(job)
	if job.Export {
		a.exportWork(job, res)
	}
	return a.finish(res)
}

// answerHello answers a host's hello request with a hello carrying its seq.
func (a *agent) answerHello(req []byte) error {
	var h initproto.Hello
	_ = json.Unmarshal(req, &h) // a malformed request is answered with seq 0
	p, _ := json.Marshal(initproto.Hello{Version: initproto.Version, PID: os.Getpid(), Seq: h.Seq})
	return a.out.WriteFrame(initproto.TypeHello, p)
}

func (a *agent) finish(r initproto.ResultFrame) int {
	p, _ := json.Marshal(r)
	if err := a.out.WriteFrame(initproto.TypeResult, p); err != nil {
		return 1
	}
	a.awaitHostClose()
	return 0
}

// awaitHostClose keeps init (and so the sandbox) alive after the result until
// the host closes stdin, for at most a.linger: on a runtime whose attach stream
// may drop what a container writes just before it exits, the result must not
// be the last thing written before exit.
func (a *agent) awaitHostClose() {
	if a.linger <= 0 {
		return
	}
	done := a.inputDone
	if done == nil {
		// The job never started: nothing reads stdin yet.
		ch := make(chan struct{})
		go func() {
			defer close(ch)
			for {
				if _, err := a.in.Next(); err != nil {
					return
				}
			}
		}()
		done = ch
	}
	t := time.NewTimer(a.linger)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// unpack streams the workspace tar frames into the work directory.
func (a *agent) unpack(job initproto.JobHeader) error {
	root, err := os.OpenRoot(a.workDir)
	if err != nil {
		return err
	}
	defer root.Close()
	fr := &frameStream{in: a.in, data: initproto.TypeTar, end: initproto.TypeTarEnd}
	_, err = workspace.Unpack(fr, root, workspace.Caps{MaxBytes: job.WorkspaceMaxBytes, MaxFiles: job.WorkspaceMaxFiles})
	if err != nil {
		return err
	}
	// Drain whatever the tar reader did not consume (padding, trailing blocks).
	if _, err := io.Copy(io.Discard, fr); err != nil {
		return err
	}
	return nil
}

// frameStream turns a run of data frames ended by an end frame into a reader.
type frameStream struct {
	in        *initproto.Reader
	data, end initproto.Type
	buf       []byte
	done      bool
}

func (s *frameStream) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.done {
			return 0, io.EOF
		}
		f, err := s.in.Next()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		switch f.Type {
		case s.data:
			s.buf = f.Payload
		case s.end:
			s.done = true
		default:
			return 0, fmt.Errorf("unexpected %s frame inside %s stream", f.Type, s.data)
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// execute runs the command and gathers its result.
func (a *agent) execute(job initproto.JobHeader) initproto.ResultFrame {
	res := initproto.ResultFrame{ExitCode: -1}
	dir := filepath.Join(a.workDir, job.Dir)
	if err := mkdirIn(a.workDir, job.Dir); err != nil {
		res.SetupError = fmt.Sprintf("working directory %s: %v", job.Dir, err)
		return res
	}
	env := jobEnv(job.Env)
	argv0, err := lookPath(job.Argv[0], envValue(env, "PATH"), dir)
	if err != nil {
		res.ExitCode = 127
		if !errors.Is(err, os.ErrNotExist) {
			res.ExitCode = 126
		}
		res.SetupError = err.Error()
		_ = a.out.WriteFrame(initproto.TypeStderr, []byte("aster-init: "+err.Error()+"\n"))
		return res
	}

	oomBefore := readOOMKills()

	var stdoutR, stdoutW, stderrR, stderrW, stdinR, stdinW *os.File
	if job.PTY != nil {
		// The terminal is the job's stdin, stdout and stderr: its output
		// comes back as stdout, the host's stdin is typed into it.
		if stdoutR, stdoutW, stdinW, err = a.terminal(*job.PTY); err != nil {
			res.SetupError = err.Error()
			return res
		}
		stdinR, stderrW = stdoutW, stdoutW
	} else if stdoutR, stdoutW, err = os.Pipe(); err != nil {
		res.SetupError = err.Error()
		return res
	} else if stderrR, stderrW, err = os.Pipe(); err != nil {
		res.SetupError = err.Error()
		return res
	}
	if job.PTY != nil {
		// stdin is the terminal
	} else if job.Stdin {
		if stdinR, stdinW, err = os.Pipe(); err != nil {
			res.SetupError = err.Error()
			return res
		}
	} else if stdinR, err = os.Open(os.DevNull); err != nil {
		res.SetupError = err.Error()
		return res
	}

	sigchld := make(chan os.Signal, 64)
	if a.jobs == nil {
		signal.Notify(sigchld, syscall.SIGCHLD)
		defer signal.Stop(sigchld)
	}
	// SIGTERM from the engine stops the job; only where the job cannot
	// reach init (see ignoreSignals). A holder's execs end with the sandbox.
	term := make(chan os.Signal, 1)
	if a.id.separate && a.jobs == nil {
		signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
		defer signal.Stop(term)
	}

	if job.EgressPort != 0 {
		// Listen before the job exists, so that it cannot take the port.
		p, err := startEgressProxy(job.EgressPort, a.out)
		if err != nil {
			res.SetupError = err.Error()
			stdoutR.Close()
			stderrR.Close()
			stdoutW.Close()
			stderrW.Close()
			stdinR.Close()
			if stdinW != nil {
				stdinW.Close()
			}
			return res
		}
		a.proxy = p
		defer p.close()
	}

	syscall.Umask(0o022)
	start := time.Now()
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{stdinR.Fd(), stdoutW.Fd(), stderrW.Fd()},
		// A session of its own: SIGCONT may be sent to any process of the
		// sender's session whatever the uids, and init must be out of reach.
		// With a terminal, it is the session's controlling terminal.
		Sys: &syscall.SysProcAttr{Setsid: true, Setctty: job.PTY != nil, Ctty: 0, Credential: a.id.credential()},
	}
	fork := func() (int, error) {
		return syscall.ForkExec(selfExe, trampolineArgv(argv0, job.Argv, a.seccomp), attr)
	}
	if a.startsDirectly() {
		// No trampoline: init forks the job itself with the job's OOM score
		// and default signal dispositions (see directStart).
		fork = func() (int, error) {
			return a.direct.around(func() (int, error) {
				return syscall.ForkExec(argv0, job.Argv, attr)
			})
		}
	}
	// A one-shot init is its job's only waiter: a reaper of its own, which
	// its SIGCHLD drives; a holder's exec shares the holder's.
	jobs := a.jobs
	if jobs == nil {
		jobs = newReaper()
	}
	pid, exitCh, err := jobs.start(fork)
	if a.id.separate && a.jobs == nil {
		// The job is started: init needs no capability any more.
		if cerr := dropCapabilities(); cerr != nil {
			logf("drop capabilities: %v", cerr)
		}
	}
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		res.ExitCode = 126
		if errors.Is(err, syscall.ENOENT) {
			res.ExitCode = 127
		}
		res.SetupError = fmt.Sprintf("exec %s: %v", job.Argv[0], err)
		_ = a.out.WriteFrame(initproto.TypeStderr, []byte("aster-init: "+res.SetupError+"\n"))
		stdoutR.Close()
		stderrR.Close()
		if stdinW != nil {
			stdinW.Close()
		}
		return res
	}

	// kill is how every reason to stop the job (deadline, output ceiling, host
	// gone, SIGTERM) ends it: SIGTERM to everything, then SIGKILL after the
	// grace; a zero grace sends SIGKILL at once.
	var termOnce, hardOnce sync.Once
	hardKill := make(chan struct{})
	kill := func(grace time.Duration) {
		termOnce.Do(func() {
			a.signalAll(pid, syscall.SIGTERM)
			go func() {
				select {
				case <-time.After(grace):
				case <-hardKill:
				}
				a.signalAll(pid, syscall.SIGKILL)
			}()
		})
		if grace == 0 {
			hardOnce.Do(func() { close(hardKill) })
		}
	}
	grace := time.Duration(job.KillGraceMS) * time.Millisecond

	// Output relays. Each counts its stream and ends the job at the ceiling.
	var limitMu sync.Mutex
	limitStream := ""
	var counts [2]atomic.Int64
	var relays sync.WaitGroup
	ceiling := job.OutputCeilingBytes
	if job.PTY != nil {
		// A terminal is streamed, never gathered: the host's pace is its
		// only bound (a job that floods it blocks on its terminal).
		ceiling = math.MaxInt64
	}
	relay := func(r *os.File, t initproto.Type, idx int, name string) {
		defer relays.Done()
		defer r.Close()
		buf := make([]byte, 32<<10)
		over := false
		for {
			n, err := r.Read(buf)
			if n > 0 && !over {
				total := counts[idx].Add(int64(n))
				chunk := buf[:n]
				if total > ceiling {
					// Relay up to the ceiling, then stop the job.
					keep := int64(n) - (total - ceiling)
					chunk = buf[:max(keep, 0)]
					over = true
					limitMu.Lock()
					if limitStream == "" {
						limitStream = name
					}
					limitMu.Unlock()
					kill(0)
				}
				if len(chunk) > 0 {
					if werr := a.out.WriteFrame(t, chunk); werr != nil {
						a.hostGone.Store(true)
						over = true
						kill(0)
					}
				}
			} else if n > 0 {
				counts[idx].Add(int64(n))
			}
			if err != nil {
				return
			}
		}
	}
	relays.Add(1)
	go relay(stdoutR, initproto.TypeStdout, 0, "stdout")
	if stderrR != nil {
		relays.Add(1)
		go relay(stderrR, initproto.TypeStderr, 1, "stderr")
	}

	// The caller's stdin, then watch for the host going away.
	hostGone := make(chan struct{})
	a.inputDone = hostGone
	go a.pumpStdin(stdinW, hostGone)

	deadline := time.NewTimer(time.Duration(job.TimeoutMS) * time.Millisecond)
	defer deadline.Stop()

	var (
		status   syscall.WaitStatus
		exited   bool
		timedOut bool
		end      time.Time
		reaped   int
	)
	var jobRusage *syscall.Rusage
	for !exited {
		select {
		case e := <-exitCh:
			status, exited, end = e.status, true, e.at
			if a.jobs != nil {
				jobRusage = &e.rusage
			}
		case <-sigchld:
			reaped += jobs.reap()
		case <-deadline.C:
			timedOut = true
			kill(grace)
		case <-hostGone:
			hostGone = nil
			kill(0)
		case <-term:
			kill(grace)
		}
	}

	// The command is done: nothing of the job may outlive it.
	before := reaped
	a.signalAll(pid, syscall.SIGKILL)
	if a.jobs != nil {
		// The holder's reaper takes what is left of the job's group.
		reaped += awaitGroupGone(pid)
	} else {
		a.reapAll(sigchld, &reaped)
	}
	leftovers := reaped - before
	if a.proxy != nil {
		// Nobody is left to use a tunnel.
		a.proxy.close()
	}

	// Every writer of the pipes is dead, so the relays reach EOF; bound the wait
	// anyway in case something we could not signal still holds a pipe.
	done := make(chan struct{})
	go func() { relays.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		logf("output pipes still open 2s after the job ended; closing")
		if a.jobs != nil {
			// The holder lives on: what still holds a pipe (a daemon the
			// job left in a session of its own) gets EPIPE, as it would when
			// a one-shot init exits, and nothing more is relayed.
			stdoutR.Close()
			if stderrR != nil {
				stderrR.Close()
			}
		}
	}

	var ru syscall.Rusage
	if jobRusage != nil {
		// The holder's children are every exec's: count this job's own.
		ru = *jobRusage
	} else {
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	}
	res.CPUTimeMS = (tvMS(ru.Utime) + tvMS(ru.Stime))
	res.PeakRSSBytes = ru.Maxrss * 1024
	res.CgroupPeakBytes = readCgroupPeak()
	res.OOMKills = max(readOOMKills()-oomBefore, 0)
	res.TimedOut = timedOut
	limitMu.Lock()
	res.OutputLimit = limitStream
	limitMu.Unlock()
	res.StdoutBytes = counts[0].Load()
	res.StderrBytes = counts[1].Load()
	res.DurationMS = end.Sub(start).Milliseconds()
	res.Leftovers = leftovers
	switch {
	case status.Exited():
		res.ExitCode = status.ExitStatus()
	case status.Signaled():
		res.Signal = int(status.Signal())
	}
	return res
}

// startsDirectly says the job is forked without the trampoline: only by a
// one-shot init (a holder's other execs may be running) that could open its
// own OOM score, and only where nothing in the sandbox can signal init while
// its ignored signals have their default disposition for the fork: init is
// PID 1 (the kernel drops such signals from inside its namespace) or the job
// has a uid of its own.
func (a *agent) startsDirectly() bool {
	return a.direct != nil && a.jobs == nil && !a.seccomp && (a.pid1 || a.id.separate)
}

// mkdirIn creates dir under root without following links out of it.
func mkdirIn(root, dir string) error {
	if dir == "." {
		return nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.MkdirAll(dir, 0o755)
}

// stdinWindow is how much of the job's stdin init takes ahead of the job.
const stdinWindow = 256 << 10

// pumpStdin reads the host's stream for as long as the job runs. Stdin frames
// go to a writer goroutine that feeds the command and grants the host more as
// the command reads (the host never sends more than granted, so the stream is
// always drained here, however slowly the command reads). EOF means the host
// is gone: it holds the stream open until the result arrives.
func (a *agent) pumpStdin(w *os.File, hostGone chan<- struct{}) {
	defer close(hostGone)
	var pending chan []byte
	if w != nil {
		// At most stdinWindow bytes are ever granted and unwritten, in frames
		// of at least one byte: a host that sends more is dropped.
		pending = make(chan []byte, 1024)
		go a.feedStdin(w, pending)
		_ = a.out.WriteFrame(initproto.TypeStdinWant, initproto.EncodeWant(stdinWindow))
	}
	endStdin := func() {
		if pending != nil {
			close(pending)
			pending = nil
		}
	}
	defer endStdin()
	for {
		f, err := a.in.Next()
		if err != nil {
			a.hostGone.Store(true)
			return
		}
		switch f.Type {
		case initproto.TypeStdin:
			if pending != nil {
				select {
				case pending <- f.Payload:
				default: // more than was granted: not ours to buffer
				}
			}
		case initproto.TypeStdinEnd:
			endStdin()
		case initproto.TypeResize:
			a.resizePTY(f.Payload)
		case initproto.TypeTunnelAnswer:
			if a.proxy != nil {
				a.proxy.answer(f.Payload)
			}
		case initproto.TypeTunnelData, initproto.TypeTunnelGrant, initproto.TypeTunnelClose:
			if a.proxy != nil {
				_ = a.proxy.mux.Handle(f) // a malformed frame from the host: dropped
			}
		default:
			// Nothing else is expected after the job starts; ignore it.
		}
	}
}

// feedStdin writes stdin frames to the command and grants the host what it
// wrote. When the command closes its stdin the rest is dropped.
func (a *agent) feedStdin(w *os.File, pending <-chan []byte) {
	open := true
	for p := range pending {
		if !open {
			continue
		}
		if _, err := w.Write(p); err != nil {
			w.Close()
			open = false
			continue
		}
		_ = a.out.WriteFrame(initproto.TypeStdinWant, initproto.EncodeWant(uint32(len(p))))
	}
	if open {
		w.Close()
	}
}

// signalAll signals the job's process group and, as PID 1, every other process
// in the sandbox (daemons that left the group with setsid included).
func (a *agent) signalAll(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
	if a.pty != nil {
		signalSession(pgid, sig)
	}
	if a.pid1 {
		_ = syscall.Kill(-1, sig)
	}
}

// reapAll waits for every remaining child, for at most a few seconds.
func (a *agent) reapAll(sigchld <-chan os.Signal, reaped *int) {
	limit := time.After(3 * time.Second)
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.ECHILD:
			return
		case p > 0:
			*reaped++
			continue
		}
		select {
		case <-sigchld:
		case <-time.After(20 * time.Millisecond):
			if a.pid1 {
				_ = syscall.Kill(-1, syscall.SIGKILL)
			}
		case <-limit:
			logf("children still running after SIGKILL")
			return
		}
	}
}

func tvMS(tv syscall.Timeval) int64 { return tv.Sec*1000 + tv.Usec/1000 }

// jobEnv is the command's whole environment: the job's variables plus defaults
// for PATH, HOME and LANG when the job did not set them. Init's own environment
// (whatever the engine or image put there) is never passed on.
func jobEnv(vars []string) []string {
	env := make([]string, 0, len(vars)+3)
	env = append(env, vars...)
	for _, d := range []string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
		"HOME=/tmp",
		"LANG=C.UTF-8",
	} {
		k, _, _ := strings.Cut(d, "=")
		if envValue(vars, k) == "" {
			env = append(env, d)
		}
	}
	return env
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// lookPath finds the executable like a shell would, using the job's PATH.
func lookPath(file, pathEnv, dir string) (string, error) {
	if strings.Contains(file, "/") {
		p := file
		if !path.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("exec %s: %w", file, err)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, file)
		if !path.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %s: executable file not found in PATH: %w", file, os.ErrNotExist)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("is a directory: %w", os.ErrPermission)
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("not executable: %w", os.ErrPermission)
	}
	return nil
}

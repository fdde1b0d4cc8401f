package runtimekit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

// ceilingSlack is how far past the output ceiling the host tolerates before it
// stops trusting init to end the job and destroys the sandbox itself.
const ceilingSlack = 2 << 20

// Session drives one job through aster-init over a pair of streams. Every
// runtime uses it, so the protocol and the Result are the same on all of them.
type Session struct {
	// W carries frames to init's stdin. Session never closes it: init reads EOF
	// as "the host is gone" and ends the job.
	W io.Writer
	// R carries init's frames.
	R *initproto.Reader
	// Destroy ends the sandbox now (host deadline, cancellation, runaway output).
	Destroy func()
	// Exited, when not nil, is closed when the sandbox is known to be gone; a
	// sandbox that goes away without a result is then reported without waiting.
	Exited <-chan struct{}
	// HelloSeen says the hello frame was already consumed (by Prepare).
	HelloSeen bool
	// HostOOM, when set, returns the sandbox's OOM kill count as the host sees
	// it (the sandbox's cgroup, or how its init ended), a source the job cannot
	// touch; ok is false when the host cannot tell, and init's report stands.
	// It is called when the result has arrived (ended false: init then waits
	// for the host, so the cgroup still exists) and, for a sandbox that ended
	// without a result, once it is gone (ended true), before it is destroyed.
	HostOOM func(ended bool) (kills int64, ok bool)
}

// exitWaitNoResult bounds the wait for a sandbox that ended without a result
// to be reported gone, so that HostOOM sees how it ended.
const exitWaitNoResult = 3 * time.Second

// Run sends job and gathers its result. It always returns a Result whose
// Status is set; err is non-nil only with StatusError.
func (s *Session) Run(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	start := time.Now()
	res := sandbox.Result{ExitCode: -1}
	hdr, err := sandbox.JobHeader(job)
	if err != nil {
		return errorResult(res, err), err
	}
	r := &sessionRun{s: s, job: job}

	// The host's own deadline: init enforces the timeout, the host enforces
	// that init does.
	r.deadline = time.AfterFunc(job.Limits.Timeout()+sandbox.KillGrace+sandbox.HostGrace, func() {
		r.end(sandbox.StatusTimeout, "aster-init did not report by the deadline; the sandbox was destroyed")
	})
	defer r.deadline.Stop()
	stopCancel := context.AfterFunc(ctx, func() {
		r.end(sandbox.StatusKilled, "cancelled: "+context.Cause(ctx).Error())
	})
	defer stopCancel()

	r.fw = initproto.NewWriter(s.W)
	if job.Egress != nil {
		r.tunnels = newHostTunnels(ctx, job.Egress, r.fw)
		// Before the report: every tunnel closed, so the Dialer's statistics
		// are complete when Run returns.
		defer r.tunnels.close()
	}
	if job.Export != nil {
		r.export = newExportSink(job.Export, job.Limits)
	}
	r.flow = newStdinFlow()
	defer r.flow.stop()
	sendErr := r.send(hdr)
	c := r.collect()
	res.Stdout = c.stdout
	res.Stderr = c.stderr
	res.Duration = time.Since(start)
	res.Export = c.export
	return r.verdict(res, c, sendErr)
}

// sessionRun is one Session.Run: what its send, collect and verdict steps
// share.
type sessionRun struct {
	s        *Session
	job      sandbox.Job
	fw       *initproto.Writer
	deadline *time.Timer // the host's own deadline; the export moves it
	tunnels  *hostTunnels
	export   *exportSink
	flow     *stdinFlow

	mu           sync.Mutex
	reason       sandbox.Status // why the host ended the run, if it did
	reasonError  string
	workspaceErr error
}

// end records why the host ends the run (the first reason stands) and
// destroys the sandbox.
func (r *sessionRun) end(st sandbox.Status, msg string) {
	r.mu.Lock()
	if r.reason == "" {
		r.reason, r.reasonError = st, msg
	}
	r.mu.Unlock()
	r.s.Destroy()
}

// send sends the job from its own goroutine: stdin may be larger than what
// the command reads, and output must be drained meanwhile. The channel gets
// what sendJob returned.
func (r *sessionRun) send(hdr initproto.JobHeader) <-chan error {
	sendErr := make(chan error, 1)
	go func() {
		err := sendJob(r.fw, hdr, r.job, r.flow)
		sendErr <- err
		var we *workspaceError
		if errors.As(err, &we) {
			// init is waiting for the rest of an archive that will never come.
			r.mu.Lock()
			r.workspaceErr = we.err
			r.mu.Unlock()
			r.end(sandbox.StatusError, err.Error())
		}
	}()
	return sendErr
}

// collected is what collect gathered from init.
type collected struct {
	rf             *initproto.ResultFrame // init's result; nil when none came
	readErr        error                  // why reading stopped short, or what was wrong
	stdout, stderr sandbox.Output
	export         *sandbox.ExportReport
}

// collect reads init's frames until its result or the end of the stream:
// the output (capped, and to OnOutput), stdin grants, tunnels, the export.
// Then it stops the host's deadline, closes the tunnels, finishes the export
// and asks HostOOM.
func (r *sessionRun) collect() collected {
	job := r.job
	stdout := NewCapture(job.Limits.OutputBytes)
	stderr := NewCapture(job.Limits.OutputBytes)
	var rf *initproto.ResultFrame
	var readErr error
	helloSeen := r.s.HelloSeen
	exporting := false
	for rf == nil && readErr == nil {
		f, err := r.s.R.Next()
		if err != nil {
			readErr = err
			break
		}
		switch f.Type {
		case initproto.TypeHello:
			if helloSeen {
				readErr = fmt.Errorf("%w: second hello frame", sandbox.ErrProtocol)
			} else if _, err := initproto.DecodeHello(f.Payload); err != nil {
				readErr = fmt.Errorf("%w: %v", sandbox.ErrProtocol, err)
			}
			helloSeen = true
		case initproto.TypeStdout, initproto.TypeStderr:
			c, name := stdout, sandbox.Stdout
			if f.Type == initproto.TypeStderr {
				c, name = stderr, sandbox.Stderr
			}
			c.Write(f.Payload)
			if job.OnOutput != nil {
				job.OnOutput(name, f.Payload)
			}
			if c.Total() > job.Limits.OutputCeilingBytes+ceilingSlack {
				r.end(sandbox.StatusOutputLimit, fmt.Sprintf("%s passed the output ceiling and aster-init did not stop it", name))
			}
		case initproto.TypeStdinWant:
			n, err := initproto.DecodeWant(f.Payload)
			if err != nil {
				readErr = fmt.Errorf("%w: %v", sandbox.ErrProtocol, err)
				break
			}
			r.flow.grant(int64(n))
		case initproto.TypeTunnelOpen, initproto.TypeTunnelData, initproto.TypeTunnelGrant, initproto.TypeTunnelClose:
			if r.tunnels == nil {
				readErr = fmt.Errorf("%w: %s frame from init in a run without egress", sandbox.ErrProtocol, f.Type)
				break
			}
			if f.Type == initproto.TypeTunnelOpen {
				err = r.tunnels.open(f.Payload)
			} else {
				err = r.tunnels.frame(f)
			}
			if err != nil {
				readErr = fmt.Errorf("%w: %v", sandbox.ErrProtocol, err)
			}
		case initproto.TypeExport, initproto.TypeExportEnd:
			if r.export == nil {
				readErr = fmt.Errorf("%w: %s frame from init in a run without export", sandbox.ErrProtocol, f.Type)
				break
			}
			if !exporting {
				// The command has exited; the export has its own deadline.
				exporting = true
				r.deadline.Reset(sandbox.ExportTimeout)
			}
			if f.Type == initproto.TypeExport {
				r.export.data(f.Payload)
			} else if err := r.export.ended(f.Payload); err != nil {
				readErr = fmt.Errorf("%w: %v", sandbox.ErrProtocol, err)
			}
		case initproto.TypeResult:
			res, err := initproto.DecodeResult(f.Payload)
			if err != nil {
				readErr = fmt.Errorf("%w: %v", sandbox.ErrProtocol, err)
				break
			}
			rf = &res
		default:
			readErr = fmt.Errorf("%w: unexpected %s frame from init", sandbox.ErrProtocol, f.Type)
		}
	}
	r.deadline.Stop()
	if r.tunnels != nil {
		r.tunnels.close()
	}
	var exportRep *sandbox.ExportReport
	if r.export != nil {
		rep := r.export.finish()
		exportRep = &rep
	}
	if rf != nil && r.s.HostOOM != nil {
		if n, ok := r.s.HostOOM(false); ok {
			rf.OOMKills = n
		}
	}
	return collected{rf: rf, readErr: readErr, stdout: stdout.Output(), stderr: stderr.Output(), export: exportRep}
}

// verdict makes the Result of what collect gathered and of why the host
// ended the run, if it did: init's report when there is one, else the
// host's reason, an OOM kill of init itself, or a protocol error.
func (r *sessionRun) verdict(res sandbox.Result, c collected, sendErr <-chan error) (sandbox.Result, error) {
	s, rf, readErr, exportRep := r.s, c.rf, c.readErr, c.export
	r.mu.Lock()
	hostReason, hostMsg, wsErr := r.reason, r.reasonError, r.workspaceErr
	r.mu.Unlock()

	if rf == nil {
		switch {
		case wsErr != nil:
			err := sandbox.WorkspaceError("workspace", wsErr, sandbox.ErrProtocol)
			return errorResult(res, err), err
		case hostReason != "":
			res.Status, res.Error = hostReason, hostMsg
			return res, nil
		case s.ranOutOfMemory():
			// The OOM killer took init itself (tmpfs pages, say, belong to no
			// process, so once the job's processes are gone init is all that
			// is left to kill). The output up to then is kept.
			s.Destroy()
			res.Status, res.OOMKilled = sandbox.StatusOOM, true
			res.Error = "the sandbox ran out of memory and aster-init was killed before it could report; the output up to then is kept"
			return res, nil
		default:
			msg := "sandbox ended without a result"
			if readErr != nil && !errors.Is(readErr, io.EOF) && !errors.Is(readErr, io.ErrUnexpectedEOF) {
				msg += ": " + readErr.Error()
			}
			select {
			case err := <-sendErr:
				if err != nil {
					msg += " (sending the job: " + err.Error() + ")"
				}
			default:
			}
			s.Destroy()
			err := fmt.Errorf("%w: %s", sandbox.ErrProtocol, msg)
			return errorResult(res, err), err
		}
	}
	if readErr != nil {
		s.Destroy()
	}
	applyResultFrame(&res, *rf, hostReason, hostMsg)
	if res.Status == sandbox.StatusError {
		// A workspace or header problem that init found: the caller's fault.
		return res, fmt.Errorf("%w: %s", sandbox.ErrInvalidSpec, res.Error)
	}
	if exportRep != nil && exportRep.Error != "" && (res.Status == sandbox.StatusOK || res.Status == sandbox.StatusExitNonzero) {
		// The command ran to its end, but the caller does not get the /work
		// it asked for: that is not a result to build on.
		class := sandbox.ErrProtocol
		if strings.Contains(exportRep.Error, workspace.ErrTooLarge.Error()) {
			class = sandbox.ErrTooLarge
		}
		res.Status = sandbox.StatusError
		res.Error = "export /work: " + exportRep.Error
		return res, fmt.Errorf("%w: %s", class, res.Error)
	}
	return res, nil
}

// ranOutOfMemory asks the host, once the sandbox is gone, whether it ended in
// an OOM kill.
func (s *Session) ranOutOfMemory() bool {
	if s.HostOOM == nil {
		return false
	}
	if s.Exited != nil {
		t := time.NewTimer(exitWaitNoResult)
		select {
		case <-s.Exited:
		case <-t.C:
		}
		t.Stop()
	}
	n, ok := s.HostOOM(true)
	return ok && n > 0
}

func errorResult(res sandbox.Result, err error) sandbox.Result {
	res.Status = sandbox.StatusError
	res.Error = err.Error()
	return res
}

// applyResultFrame turns init's report into the Result's status and numbers.
// The order of the checks decides which limit is named when several were hit.
func applyResultFrame(res *sandbox.Result, rf initproto.ResultFrame, hostReason sandbox.Status, hostMsg string) {
	res.ExitCode = rf.ExitCode
	if rf.Signal != 0 {
		res.Signal = sandbox.SignalName(rf.Signal)
	}
	res.CPUTime = time.Duration(rf.CPUTimeMS) * time.Millisecond
	res.PeakMemoryBytes = rf.PeakRSSBytes
	res.OOMKilled = rf.OOMKills > 0
	if rf.DurationMS > 0 {
		res.Duration = time.Duration(rf.DurationMS) * time.Millisecond
	}
	switch {
	case rf.SetupError != "" && rf.ExitCode < 0 && rf.Signal == 0:
		res.Status, res.Error = sandbox.StatusError, rf.SetupError
	case rf.OutputLimit != "" || hostReason == sandbox.StatusOutputLimit:
		res.Status = sandbox.StatusOutputLimit
		res.Error = fmt.Sprintf("%s passed the output ceiling; the job was ended", rf.OutputLimit)
		if rf.OutputLimit == "" {
			res.Error = hostMsg
		}
	case rf.OOMKills > 0:
		// Whatever the command's own exit: a job that lost a process to the
		// OOM killer (a worker of make -j or pytest-xdist) did not run as
		// written, and a hang or timeout that follows is its consequence.
		res.Status, res.Error = sandbox.StatusOOM, "a process of the job was killed for running out of memory"
	case rf.TimedOut || hostReason == sandbox.StatusTimeout:
		res.Status, res.Error = sandbox.StatusTimeout, "the job passed its wall-clock timeout and was killed"
	case hostReason == sandbox.StatusKilled:
		res.Status, res.Error = sandbox.StatusKilled, hostMsg
	case rf.Signal != 0:
		res.Status, res.Error = sandbox.StatusKilled, "the command was ended by "+res.Signal
	case rf.ExitCode == 0:
		res.Status = sandbox.StatusOK
	default:
		res.Status = sandbox.StatusExitNonzero
		if rf.SetupError != "" {
			res.Error = rf.SetupError
		}
	}
}

// stdinFlow is the host's side of stdin flow control: init grants bytes
// (TypeStdinWant) as the command reads them, and the host sends no more than
// it was granted, so the stream to init is never backed up behind a command
// that does not read its stdin, and init always sees the host going away.
type stdinFlow struct {
	credit atomic.Int64
	more   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func newStdinFlow() *stdinFlow {
	return &stdinFlow{more: make(chan struct{}, 1), done: make(chan struct{})}
}

func (f *stdinFlow) grant(n int64) {
	f.credit.Add(n)
	select {
	case f.more <- struct{}{}:
	default:
	}
}

// take waits for credit and takes up to want bytes of it. It is called from
// one goroutine only.
func (f *stdinFlow) take(want int) (int, error) {
	for {
		if avail := f.credit.Load(); avail > 0 {
			k := min(avail, int64(want))
			f.credit.Add(-k)
			return int(k), nil
		}
		select {
		case <-f.more:
		case <-f.done:
			return 0, errors.New("the run ended before the command read all its stdin")
		}
	}
}

func (f *stdinFlow) stop() { f.once.Do(func() { close(f.done) }) }

// sendJob writes the header, the workspace and stdin as frames.
func sendJob(fw *initproto.Writer, hdr initproto.JobHeader, job sandbox.Job, flow *stdinFlow) error {
	p, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	if err := fw.WriteFrame(initproto.TypeJob, p); err != nil {
		return fmt.Errorf("send job header: %w", err)
	}
	if hdr.Workspace {
		w := initproto.NewChunkBuffer(fw, initproto.TypeTar, 256<<10)
		caps := workspace.Caps{MaxBytes: job.Limits.WorkdirBytes}
		if job.Workspace.Tar != nil {
			_, err = workspace.Filter(job.Workspace.Tar, w, caps)
		} else {
			_, err = workspace.PackFiles(job.Workspace.Files, w, caps)
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			return &workspaceError{err}
		}
		if err := fw.WriteFrame(initproto.TypeTarEnd, nil); err != nil {
			return fmt.Errorf("send workspace: %w", err)
		}
	}
	forwardResizes(fw, job.Terminal, flow.done)
	if hdr.Stdin {
		buf := make([]byte, 256<<10)
		for {
			n, rerr := job.Stdin.Read(buf)
			for data := buf[:n]; len(data) > 0; {
				k, err := flow.take(len(data))
				if err != nil {
					return err
				}
				if err := fw.WriteFrame(initproto.TypeStdin, data[:k]); err != nil {
					return fmt.Errorf("send stdin: %w", err)
				}
				data = data[k:]
			}
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil {
				return fmt.Errorf("send stdin: %w", rerr)
			}
		}
		if err := fw.WriteFrame(initproto.TypeStdinEnd, nil); err != nil {
			return fmt.Errorf("send stdin: %w", err)
		}
	}
	return nil
}

// workspaceError is a failure to send the workspace: a refused archive, or a
// broken stream to init. Either way the job cannot start.
type workspaceError struct{ err error }

func (e *workspaceError) Error() string { return "send workspace: " + e.err.Error() }
func (e *workspaceError) Unwrap() error { return e.err }

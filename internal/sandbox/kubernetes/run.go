package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// endWait bounds how long a run that lost its stream waits for the Pod's status
// to say why (OOMKilled, DeadlineExceeded) before it reports what it has.
const endWait = 5 * time.Second

// streamEndWait bounds how long Close lets the attach stream end by itself.
const streamEndWait = 2 * time.Second

// instance is one prepared sandbox Pod.
type instance struct {
	rt    *Runtime
	name  string
	image string
	watch *podWatch
	// exited is closed once the sandbox container or the Pod has ended.
	exited chan struct{}

	stdin        *io.PipeWriter
	frames       *initproto.Reader
	initLog      *runtimekit.LockedCapture
	cancelStream context.CancelFunc
	streamDone   chan struct{}

	mu        sync.Mutex
	streamErr error
	runtimekit.InstanceState

	destroyOnce sync.Once
}

var _ sandbox.Instance = (*instance)(nil)

func (i *instance) ID() string { return i.name }

// Done is closed once the sandbox is known to be gone (the warm pool skips it).
func (i *instance) Done() <-chan struct{} { return i.exited }

func (i *instance) setStreamErr(err error) {
	i.mu.Lock()
	i.streamErr = err
	i.mu.Unlock()
}

// streamErrOr names why the attach stream ended, when it did, else err.
func (i *instance) streamErrOr(err error) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.streamErr != nil && !errors.Is(i.streamErr, io.EOF) {
		return i.streamErr
	}
	return err
}

func (i *instance) initDiagnostics() string {
	if i.initLog == nil {
		return ""
	}
	if s := i.initLog.String(); s != "" {
		return " (" + s + ")"
	}
	return ""
}

// Run implements sandbox.Instance.
func (i *instance) Run(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	return i.RunOnce(ctx, job, runtimekit.RunParts{
		ID:      i.name,
		Runtime: i.rt.Name(),
		W:       i.stdin,
		R:       i.frames,
		Destroy: i.destroy,
		Exited:  i.exited,
		HostOOM: i.hostOOM,
		After: func(res sandbox.Result, err error) (sandbox.Result, error) {
			return i.afterRun(ctx, res, err)
		},
		Diagnostics: i.initDiagnostics,
	})
}

// afterRun ends the attach once the session is over and reads a result
// the kubelet decided (its deadline) or a run without one from the Pod.
func (i *instance) afterRun(ctx context.Context, res sandbox.Result, err error) (sandbox.Result, error) {
	// The result is read (or will never come): closing stdin lets aster-init,
	// which lingers after its result, exit.
	i.stdin.Close()
	switch {
	case err != nil && errors.Is(err, sandbox.ErrProtocol):
		res, err = i.explain(ctx, res, err)
	case res.Status == sandbox.StatusKilled && i.pastActiveDeadline():
		// The kubelet stopped the Pod at its deadline (SIGTERM, then SIGKILL),
		// and aster-init reported the job ended by that signal.
		res.Status = sandbox.StatusTimeout
		res.Error = "the Pod passed its activeDeadlineSeconds and was stopped by the kubelet (" + res.Error + ")"
	}
	return res, err
}

// explain turns a run that ended without a result into what the Pod's status
// says happened: the kubelet's deadline (timeout), an OOM kill of aster-init
// itself (oom), or an API server that went away with the attach stream
// (sandbox.ErrUnavailable).
func (i *instance) explain(ctx context.Context, res sandbox.Result, err error) (sandbox.Result, error) {
	var end endState
	i.watch.until(context.WithoutCancel(ctx), endWait, func(p *corev1.Pod, gone bool) bool {
		end = endStateOf(p, gone)
		return end.ended
	})
	switch {
	case end.deadline || i.pastActiveDeadline():
		// The kubelet stopped the Pod at its deadline: SIGTERM, which init
		// ignores (the job shares its uid here), then SIGKILL.
		res.Status = sandbox.StatusTimeout
		res.Error = "the Pod passed its activeDeadlineSeconds and was stopped by the kubelet"
		if end.reason != "" {
			res.Error += ": " + end.reason
		}
		return res, nil
	case end.oom:
		res.Status = sandbox.StatusOOM
		res.OOMKilled = true
		res.Signal = "SIGKILL"
		res.Error = "the sandbox ran out of memory and its container was OOM-killed"
		return res, nil
	}
	if end.reason != "" {
		res.Error += " (" + end.reason + ")"
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if cerr := i.rt.Check(cctx); cerr != nil {
		err = fmt.Errorf("%w (the run lost its sandbox: %v)", cerr, err)
		res.Error = err.Error()
	}
	return res, err
}

// hostOOM implements runtimekit.Session.HostOOM. While the sandbox runs the host
// cannot read its cgroup (it is on a node), so init's report stands; once it
// has ended without a result, the Pod's status says whether the OOM killer
// took init, and it is read before the Session deletes the Pod.
func (i *instance) hostOOM(ended bool) (int64, bool) {
	if !ended {
		return 0, false
	}
	var end endState
	i.watch.until(context.Background(), endWait, func(p *corev1.Pod, gone bool) bool {
		end = endStateOf(p, gone)
		return end.ended
	})
	if end.oom && !end.deadline && !i.pastActiveDeadline() {
		return 1, true
	}
	return 0, false
}

// pastActiveDeadline says the Pod has reached its activeDeadlineSeconds.
func (i *instance) pastActiveDeadline() bool {
	p, _, _ := i.watch.state()
	if p == nil || p.Spec.ActiveDeadlineSeconds == nil || p.Status.StartTime == nil {
		return false
	}
	end := p.Status.StartTime.Add(time.Duration(*p.Spec.ActiveDeadlineSeconds) * time.Second)
	return !time.Now().Before(end.Add(-time.Second)) || p.Status.Reason == "DeadlineExceeded"
}

// destroy ends the sandbox now: the Session calls it at the host's deadline,
// on cancellation or on runaway output.
func (i *instance) destroy() {
	i.destroyOnce.Do(func() {
		if i.cancelStream != nil {
			i.cancelStream()
		}
		go func() {
			if err := i.rt.deletePod(context.Background(), i.name); err != nil && errors.Is(err, sandbox.ErrUnavailable) {
				i.rt.deleter.add(i.name)
			}
		}()
	})
}

// Close implements sandbox.Instance: delete the Pod (no grace), stop the
// stream and the watch. When the API server is away, the deletion is retried
// in the background until it is back.
func (i *instance) Close(ctx context.Context) error {
	return i.CloseOnce(func() (closeErr error) {
		if i.stdin != nil {
			// aster-init exits once its stdin closes, which ends the attach
			// stream cleanly; a stream still open then is cut below.
			i.stdin.Close()
			select {
			case <-i.streamDone:
			case <-time.After(streamEndWait):
			}
		}
		closeErr = i.rt.deletePod(context.WithoutCancel(ctx), i.name)
		if i.cancelStream != nil {
			i.cancelStream()
			<-i.streamDone
		}
		if closeErr != nil {
			if errors.Is(closeErr, sandbox.ErrUnavailable) {
				i.rt.deleter.add(i.name)
			}
			i.rt.log.Warn("delete sandbox pod", "pod", i.name, "err", closeErr)
		}
		i.watch.stop()
		return closeErr
	})
}

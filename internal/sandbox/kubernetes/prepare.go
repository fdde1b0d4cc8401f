package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// Pacing of the hello exchange that tells the host its attach is live.
const (
	helloRetry   = 250 * time.Millisecond
	helloTimeout = 30 * time.Second
)

// policyRecheck is how often the NetworkPolicy is verified again.
const policyRecheck = time.Minute

// Prepare implements sandbox.Runtime: create the Pod, wait for the sandbox
// container to run (failing fast on image and start errors, and on a Pod the
// scheduler cannot place within ScheduleTimeout), attach, and exchange hellos
// with aster-init until the attach stream is known to carry its output. On any
// failure after create the Pod is deleted.
func (r *Runtime) Prepare(ctx context.Context, opts sandbox.PrepareOptions) (_ sandbox.Instance, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err // a zero resource limit or sizeLimit means "none" to the kubelet
	}
	t0 := time.Now()
	if err := r.ensureNetworkPolicy(ctx); err != nil {
		return nil, err
	}
	if err := r.admit(ctx); err != nil {
		return nil, err
	}
	created, err := r.pods.Create(ctx, r.podSpec(opts, time.Now()), metav1.CreateOptions{})
	if err != nil {
		return nil, classify("create pod", err)
	}
	inst := &instance{
		rt:     r,
		name:   created.Name,
		image:  opts.Image,
		exited: make(chan struct{}),
	}
	inst.SetTiming("create", time.Since(t0))
	inst.watch = r.observe(ctx, created)
	defer func() {
		if err != nil {
			inst.Close(context.WithoutCancel(ctx))
		}
	}()

	t1 := time.Now()
	if err := inst.awaitRunning(ctx, t0); err != nil {
		return nil, err
	}
	inst.SetTiming("start", time.Since(t1))
	go inst.watchExit()

	t2 := time.Now()
	if err := inst.attach(ctx); err != nil {
		return nil, err
	}
	inst.SetTiming("init", time.Since(t2))
	return inst, nil
}

// ensureNetworkPolicy makes sure the deny-all policy exists before a sandbox
// starts (creating it when missing), at most once a minute.
func (r *Runtime) ensureNetworkPolicy(ctx context.Context) error {
	r.policyMu.Lock()
	defer r.policyMu.Unlock()
	if !r.policyChecked.IsZero() && time.Since(r.policyChecked) < policyRecheck {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	np, err := r.policies.Get(ctx, NetworkPolicyName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		np, err = r.policies.Create(ctx, r.networkPolicy(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // another replica was first
			np, err = r.policies.Get(ctx, NetworkPolicyName, metav1.GetOptions{})
		}
		if err == nil {
			r.log.Info("created the sandbox NetworkPolicy", "namespace", r.opts.Namespace, "name", NetworkPolicyName)
		}
	}
	if err != nil {
		return classify("sandbox network policy", err)
	}
	if !denies(np) {
		return fmt.Errorf("the NetworkPolicy %s/%s exists but does not deny all traffic to sandbox Pods; delete it and Aster recreates it", r.opts.Namespace, NetworkPolicyName)
	}
	r.policyChecked = time.Now()
	return nil
}

// admit enforces MaxPods: the live sandbox Pods of the namespace, whoever
// created them, from the API server's cache.
func (r *Runtime) admit(ctx context.Context) error {
	if r.opts.MaxPods <= 0 {
		return nil
	}
	n, err := r.livePods(ctx)
	if err != nil {
		return err
	}
	if n >= r.opts.MaxPods {
		return fmt.Errorf("%w: %d sandbox Pods are live in namespace %s (max-pods %d)", sandbox.ErrBusy, n, r.opts.Namespace, r.opts.MaxPods)
	}
	return nil
}

// livePods counts the sandbox Pods that hold resources: not ended, not deleted.
func (r *Runtime) livePods(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := r.pods.List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=true", ResourceVersion: "0"})
	if err != nil {
		return 0, classify("count sandbox pods", err)
	}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n, nil
}

// awaitRunning waits for the sandbox container to run.
func (i *instance) awaitRunning(ctx context.Context, created time.Time) error {
	o := i.rt.opts
	startBy := created.Add(o.StartTimeout)
	scheduleBy := created.Add(o.ScheduleTimeout)
	var st startState
	for {
		now := time.Now()
		wait := startBy.Sub(now)
		if !st.scheduled {
			wait = min(wait, scheduleBy.Sub(now))
		}
		i.watch.until(ctx, max(wait, 0), func(p *corev1.Pod, gone bool) bool {
			st = startStateOf(p, gone)
			return st.running || st.err != nil || (!st.scheduled && time.Now().After(scheduleBy))
		})
		switch {
		case st.running:
			return nil
		case st.err != nil:
			return st.err
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case !st.scheduled && time.Now().After(scheduleBy):
			if st.unschedulable != "" {
				return fmt.Errorf("%w: the cluster could not place the sandbox Pod within %s: %s", sandbox.ErrUnavailable, o.ScheduleTimeout, st.unschedulable)
			}
			msg := "no scheduling decision yet"
			if err := i.watch.err(); err != nil {
				msg = "the API server: " + err.Error()
			}
			return fmt.Errorf("%w: the sandbox Pod was not scheduled within %s (%s)", sandbox.ErrUnavailable, o.ScheduleTimeout, msg)
		case time.Now().After(startBy):
			return fmt.Errorf("%w: the sandbox Pod did not start within %s", sandbox.ErrUnavailable, o.StartTimeout)
		}
	}
}

// watchExit closes i.exited once the sandbox container or its Pod has ended.
func (i *instance) watchExit() {
	defer close(i.exited)
	i.watch.until(context.Background(), 1<<62, func(p *corev1.Pod, gone bool) bool {
		if p != nil {
			i.rt.learnDigest(i.image, imageID(p))
		}
		return endStateOf(p, gone).ended
	})
}

// attach connects the host to aster-init's stdin and stdout, then sends hello
// requests until one is answered: the container runtime adds an attach's
// stdout only after it starts feeding its stdin, so what init writes in
// between would be lost to the host; once an answer arrives, nothing is.
func (i *instance) attach(ctx context.Context) error {
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	i.stdin = stdinW
	i.initLog = runtimekit.NewLockedCapture(16 << 10)
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	i.cancelStream = cancel
	i.streamDone = make(chan struct{})
	go func() {
		defer close(i.streamDone)
		err := i.rt.attach(sctx, i.name, remotecommand.StreamOptions{Stdin: stdinR, Stdout: stdoutW, Stderr: i.initLog})
		if err == nil {
			err = io.EOF
		}
		i.setStreamErr(err)
		stdoutW.CloseWithError(err)
		stdinR.CloseWithError(errStreamEnded)
	}()
	i.frames = initproto.NewReader(stdoutR)
	fw := initproto.NewWriter(stdinW)

	type frameOrErr struct {
		f   initproto.Frame
		err error
	}
	next := make(chan frameOrErr, 1)
	pending := false
	// One request in flight at most, so the answer to the latest one is the
	// last hello init sends.
	var seq int64
	writing := false
	written := make(chan error, 1)
	ask := func() {
		seq++
		writing = true
		p, _ := json.Marshal(initproto.Hello{Version: initproto.Version, Seq: seq})
		go func() { written <- fw.WriteFrame(initproto.TypeHello, p) }() // a stalled stream must not stall us
	}
	ask()
	retry := time.NewTicker(helloRetry)
	defer retry.Stop()
	give := time.NewTimer(helloTimeout)
	defer give.Stop()
	for {
		if !pending {
			pending = true
			go func() {
				f, err := i.frames.Next()
				next <- frameOrErr{f, err}
			}()
		}
		select {
		case r := <-next:
			pending = false
			if r.err != nil {
				return fmt.Errorf("%w: aster-init did not answer over the attach stream: %v%s", sandbox.ErrProtocol, i.streamErrOr(r.err), i.initDiagnostics())
			}
			if r.f.Type != initproto.TypeHello {
				return fmt.Errorf("%w: aster-init sent %s before the job", sandbox.ErrProtocol, r.f.Type)
			}
			h, err := initproto.DecodeHello(r.f.Payload)
			if err != nil {
				return fmt.Errorf("%w: %v", sandbox.ErrProtocol, err)
			}
			if h.Seq == seq {
				return nil // every later frame reaches us
			}
			// init's first hello, or the answer to an earlier request: more follow.
		case err := <-written:
			writing = false
			if err != nil {
				return fmt.Errorf("%w: sending hello to aster-init: %v%s", sandbox.ErrProtocol, i.streamErrOr(err), i.initDiagnostics())
			}
		case <-retry.C:
			if !writing {
				ask()
			}
		case <-give.C:
			return fmt.Errorf("%w: aster-init did not answer over the attach stream within %s%s", sandbox.ErrProtocol, helloTimeout, i.initDiagnostics())
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

var errStreamEnded = fmt.Errorf("the attach stream ended")

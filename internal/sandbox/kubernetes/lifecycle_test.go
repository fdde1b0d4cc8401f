package kubernetes_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/kubernetes"
	"github.com/asterhq/aster/internal/sandbox/kubernetes/kubetest"
	"github.com/asterhq/aster/internal/sandbox/reaper"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandbox/securitytest"
)

func prepare(t *testing.T, rt *kubernetes.Runtime, l sandbox.Limits, deadline time.Time) (sandbox.Instance, error) {
	t.Helper()
	return rt.Prepare(t.Context(), sandbox.PrepareOptions{RunID: sandbox.NewRunID(), Image: sandboxtest.Image(), Limits: l, Deadline: deadline})
}

// podsIn lists the sandbox Pods of a namespace.
func podsIn(t *testing.T, opts kubernetes.Options) []corev1.Pod {
	t.Helper()
	list, err := kubetest.Core(t, opts.Config).Pods(opts.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: kubernetes.LabelManaged + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestUnschedulable: a Pod no node can take fails the run within the bound,
// with the scheduler's reason, and is deleted.
func TestUnschedulable(t *testing.T) {
	opts := kubetest.Options(t)
	opts.ScheduleTimeout = 3 * time.Second
	rt := kubetest.New(t, opts)
	l := sandbox.DefaultLimits()
	l.MemoryBytes = 60 << 30
	t0 := time.Now()
	inst, err := prepare(t, rt, l, time.Now().Add(time.Minute))
	if err == nil {
		inst.Close(context.Background())
		t.Fatal("a 60 GiB sandbox was scheduled")
	}
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "Insufficient memory") {
		t.Fatalf("error %v, want ErrUnavailable with the scheduler's reason", err)
	}
	if d := time.Since(t0); d > 15*time.Second {
		t.Fatalf("gave up after %s, bound 3s", d)
	}
	waitFor(t, 10*time.Second, "the unschedulable Pod to be deleted", func() bool { return len(podsIn(t, opts)) == 0 })
}

// TestUnknownImage: an image the node cannot have fails fast as ErrUnknownImage.
func TestUnknownImage(t *testing.T) {
	rt := kubetest.Runtime(t)
	_, err := rt.Prepare(t.Context(), sandbox.PrepareOptions{RunID: sandbox.NewRunID(), Image: "aster-no-such-image:1", Limits: sandbox.DefaultLimits(), Deadline: time.Now().Add(time.Minute)})
	if !errors.Is(err, sandbox.ErrUnknownImage) {
		t.Fatalf("error %v, want ErrUnknownImage", err)
	}
}

// TestPodDeadline: past activeDeadlineSeconds the kubelet stops the Pod, and
// the run reports a timeout, even when aster-init's own deadline is later.
func TestPodDeadline(t *testing.T) {
	rt := kubetest.Runtime(t)
	l := sandbox.DefaultLimits()
	l.TimeoutMS = 60_000
	// activeDeadlineSeconds counts from the Pod's start: leave the start
	// room on a loaded node (3.7 s seen at a load of 20 on 2 cores), so the
	// deadline falls in the job, not in the Pod's start.
	inst, err := prepare(t, rt, l, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	t0 := time.Now()
	res, err := inst.Run(t.Context(), sandbox.Job{Argv: []string{"sh", "-c", "echo begun; sleep 600"}, Limits: l})
	t.Logf("after %s: %+v", time.Since(t0), res.Wire())
	if err != nil || res.Status != sandbox.StatusTimeout {
		t.Fatalf("status %s err %v, want timeout", res.Status, err)
	}
	if string(res.Stdout.Data) != "begun\n" {
		t.Fatalf("output before the deadline lost: %q", res.Stdout.Data)
	}
}

// TestMaxPods: the namespace-wide cap counts live sandbox Pods, whoever made them.
func TestMaxPods(t *testing.T) {
	opts := kubetest.Options(t)
	opts.MaxPods = 1
	rt := kubetest.New(t, opts)
	other := kubetest.New(t, opts) // another replica, same namespace
	l := sandbox.DefaultLimits()
	l.MilliCPUs = 100
	first, err := prepare(t, rt, l, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prepare(t, other, l, time.Now().Add(time.Minute)); !errors.Is(err, sandbox.ErrBusy) {
		t.Fatalf("second Pod past max-pods 1: %v, want ErrBusy", err)
	}
	first.Close(context.Background())
	waitFor(t, 20*time.Second, "room for a Pod", func() bool {
		inst, err := prepare(t, other, l, time.Now().Add(time.Minute))
		if err == nil {
			inst.Close(context.Background())
		}
		return err == nil
	})
}

// TestNetworkPolicyRefusesATamperedOne: a policy of Aster's name that lets
// traffic through stops every run rather than being trusted.
func TestNetworkPolicyRefusesATamperedOne(t *testing.T) {
	opts := kubetest.Options(t)
	netc, err := networkingv1client.NewForConfig(opts.Config)
	if err != nil {
		t.Fatal(err)
	}
	open := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetes.NetworkPolicyName},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{}},
		},
	}
	if _, err := netc.NetworkPolicies(opts.Namespace).Create(t.Context(), open, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rt := kubetest.New(t, opts)
	if _, err := prepare(t, rt, sandbox.DefaultLimits(), time.Now().Add(time.Minute)); err == nil || !strings.Contains(err.Error(), "does not deny") {
		t.Fatalf("run allowed under an open policy: %v", err)
	}
	if n := len(podsIn(t, opts)); n != 0 {
		t.Fatalf("%d Pods created under an open policy", n)
	}
}

// TestHelperOrchestrator is not a test: TestKilledOrchestratorLeavesNothing
// runs it in a child process as an orchestrator holding one sandbox Pod, and
// kills it with SIGKILL.
func TestHelperOrchestrator(t *testing.T) {
	ns := os.Getenv("ASTER_K8S_HELPER_NAMESPACE")
	if ns == "" {
		t.Skip("helper process only")
	}
	opts := kubetest.Options(t)
	opts.Namespace = ns
	rt, err := kubernetes.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := prepare(t, rt, sandbox.DefaultLimits(), time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	go inst.Run(context.Background(), sandbox.Job{Argv: []string{"sleep", "600"}, Limits: sandbox.DefaultLimits()})
	time.Sleep(time.Second)
	os.Stdout.WriteString("ready " + inst.ID() + "\n")
	select {} // until killed
}

// TestKilledOrchestratorLeavesNothing is SECURITY.md G4 on Kubernetes: after a
// `kill -9` of the process that holds a sandbox Pod mid-run, the Pod's job ends
// by itself (its attach closes, so aster-init's stdin does), and the reaper of
// a later process removes the Pod without waiting for the deadline label.
func TestKilledOrchestratorLeavesNothing(t *testing.T) {
	opts := kubetest.Options(t)
	cmd, id := sandboxtest.StartHelperOrchestrator(t, "ASTER_K8S_HELPER_NAMESPACE="+opts.Namespace, "ASTER_K8S_INIT_IMAGE="+opts.InitImage)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()

	core := kubetest.Core(t, opts.Config).Pods(opts.Namespace)
	waitFor(t, 30*time.Second, "the orphaned Pod's job to end", func() bool {
		p, err := core.Get(context.Background(), id, metav1.GetOptions{})
		return err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
	})
	t.Logf("the orphaned sandbox ended %s after the orchestrator died", time.Since(killed).Round(time.Millisecond))

	later := kubetest.New(t, opts)
	list, err := later.List(t.Context())
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list after the crash: %+v %v", list, err)
	}
	if !list[0].Deadline.Before(time.Now()) {
		t.Fatalf("an ended Pod keeps its far deadline %s", list[0].Deadline)
	}
	ro := reaper.ForRuntime(later)
	ro.Grace = 0
	actions, err := reaper.New(ro).Once(t.Context(), false)
	if err != nil || len(actions) != 1 || !actions[0].Removed {
		t.Fatalf("reaper: %+v %v", actions, err)
	}
	waitFor(t, 20*time.Second, "the Pod to be gone", func() bool { return len(podsIn(t, opts)) == 0 })
	if err := later.Remove(t.Context(), id); err != nil {
		t.Fatalf("second remove: %v", err)
	}
}

// TestRemoveKillsALiveSandbox: the reaper's Remove of a running Pod ends its run.
func TestRemoveKillsALiveSandbox(t *testing.T) {
	opts := kubetest.Options(t)
	rt := kubetest.New(t, opts)
	inst, err := prepare(t, rt, sandbox.DefaultLimits(), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	securitytest.RemoveEndsLiveRun(t, rt, inst, 500*time.Millisecond, 20*time.Second)
	waitFor(t, 20*time.Second, "the Pod to be gone", func() bool { return len(podsIn(t, opts)) == 0 })
}

package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/asterhq/aster/internal/sandbox"
)

func newTestRuntime(t *testing.T, mod func(*Options)) *Runtime {
	t.Helper()
	o := Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, InitImage: "aster-init:test", Labels: map[string]string{"team": "x", "bad key!": "y", LabelManaged: "false"}}
	if mod != nil {
		mod(&o)
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPodSpecIsHardened checks the Pod a run gets, whatever its limits: the
// settings no request can change.
func TestPodSpecIsHardened(t *testing.T) {
	r := newTestRuntime(t, func(o *Options) { o.RuntimeClass = "gvisor" })
	now := time.Unix(1_700_000_000, 0)
	l := sandbox.Limits{TimeoutMS: 5000, MemoryBytes: 256 << 20, MilliCPUs: 500, Pids: 64, WorkdirBytes: 64 << 20, TmpBytes: 16 << 20}
	p := r.podSpec(sandbox.PrepareOptions{RunID: "r-ABC_1", Image: "img:1", Limits: l, Deadline: now.Add(90*time.Second + 300*time.Millisecond)}, now)
	s := p.Spec
	if p.Labels[LabelManaged] != "true" || p.Labels[LabelRun] != "r-ABC_1" || p.Labels[LabelDeadline] != "1700000090" || p.Labels["team"] != "x" || len(p.Labels) != 4 {
		t.Errorf("labels %v", p.Labels)
	}
	if p.GenerateName != "aster-r-abc-1-" || p.Namespace != DefaultNamespace {
		t.Errorf("name %q in %q", p.GenerateName, p.Namespace)
	}
	if s.RestartPolicy != corev1.RestartPolicyNever || *s.AutomountServiceAccountToken || *s.EnableServiceLinks || s.HostNetwork || s.HostPID || s.HostIPC {
		t.Errorf("pod settings: %+v", s)
	}
	if *s.ActiveDeadlineSeconds != 91 {
		t.Errorf("activeDeadlineSeconds %d, want 91", *s.ActiveDeadlineSeconds)
	}
	if *s.RuntimeClassName != "gvisor" || s.DNSPolicy != corev1.DNSNone {
		t.Errorf("runtime class %v, DNS %s", s.RuntimeClassName, s.DNSPolicy)
	}
	for _, c := range append(s.Containers, s.InitContainers...) {
		sc := c.SecurityContext
		if !*sc.RunAsNonRoot || *sc.RunAsUser != SandboxUID || *sc.AllowPrivilegeEscalation || *sc.Privileged || !*sc.ReadOnlyRootFilesystem ||
			sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: security context %+v", c.Name, sc)
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			lim, req := c.Resources.Limits[res], c.Resources.Requests[res]
			if lim.IsZero() || lim.Cmp(req) != 0 {
				t.Errorf("%s: %s limit %s request %s", c.Name, res, lim.String(), req.String())
			}
		}
	}
	c := s.Containers[0]
	if c.Resources.Limits.Memory().Value() != l.MemoryBytes || c.Resources.Limits.Cpu().MilliValue() != l.MilliCPUs {
		t.Errorf("limits %v", c.Resources.Limits)
	}
	if !c.Stdin || !c.StdinOnce || c.TTY || c.Command[0] != InitPath || c.Image != "img:1" {
		t.Errorf("sandbox container %+v", c)
	}
	if ic := s.InitContainers[0]; ic.Image != "aster-init:test" || strings.Join(ic.Command, " ") != "/aster-init -install /aster/init" {
		t.Errorf("init container %+v", ic)
	}
	sizes := map[string]int64{}
	for _, v := range s.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
			t.Errorf("volume %s is not a memory emptyDir", v.Name)
			continue
		}
		sizes[v.Name] = v.EmptyDir.SizeLimit.Value()
	}
	if sizes["work"] != l.WorkdirBytes || sizes["tmp"] != l.TmpBytes || sizes["aster-init"] <= 0 || len(sizes) != 3 {
		t.Errorf("volumes %v", sizes)
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == InitDir && !m.ReadOnly {
			t.Error("aster-init mounted read-write")
		}
	}
	if !denies(r.networkPolicy()) {
		t.Error("the policy Aster creates does not deny")
	}
}

func TestLabelValueAndName(t *testing.T) {
	for _, id := range []string{"r-3f9a0c1d2e4b", "w-abc", "", "---", "UPPER_case.run", strings.Repeat("x", 200), "a/b c\nd", "é"} {
		v := labelValue(id)
		if errs := validation.IsValidLabelValue(v); len(errs) != 0 || v == "" {
			t.Errorf("labelValue(%q) = %q: %v", id, v, errs)
		}
		prefix := podNamePrefix(v)
		if errs := validation.IsDNS1123Subdomain(prefix + "abcde"); len(errs) != 0 || len(prefix) > 63-5 {
			t.Errorf("podNamePrefix(%q) = %q: %v", v, prefix, errs)
		}
	}
}

func TestDenies(t *testing.T) {
	base := func() *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelManaged: "true"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		}}
	}
	cases := map[string]func(*networkingv1.NetworkPolicy){
		"egress allowed":      func(p *networkingv1.NetworkPolicy) { p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}} },
		"ingress allowed":     func(p *networkingv1.NetworkPolicy) { p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}} },
		"egress not governed": func(p *networkingv1.NetworkPolicy) { p.Spec.PolicyTypes = p.Spec.PolicyTypes[:1] },
		"other pods selected": func(p *networkingv1.NetworkPolicy) { p.Spec.PodSelector.MatchLabels = map[string]string{"app": "x"} },
		"narrowed by an expr.": func(p *networkingv1.NetworkPolicy) {
			p.Spec.PodSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{}}
		},
	}
	if !denies(base()) {
		t.Fatal("base policy should deny")
	}
	all := base()
	all.Spec.PodSelector = metav1.LabelSelector{}
	if !denies(all) {
		t.Error("a policy over every Pod of the namespace denies too")
	}
	for name, mod := range cases {
		p := base()
		mod(p)
		if denies(p) {
			t.Errorf("%s: accepted as deny-all", name)
		}
	}
}

func TestStartState(t *testing.T) {
	waiting := func(reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: ContainerName, Image: "img:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}
	}
	pod := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		mod(p)
		return p
	}
	if st := startStateOf(nil, true); st.err == nil {
		t.Error("a deleted Pod is no failure")
	}
	st := startStateOf(pod(func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient memory."}}
	}), false)
	if st.scheduled || st.err != nil || !strings.Contains(st.unschedulable, "Insufficient memory") {
		t.Errorf("unschedulable: %+v", st)
	}
	st = startStateOf(pod(func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("ErrImageNeverPull")}
	}), false)
	if !errors.Is(st.err, sandbox.ErrUnknownImage) {
		t.Errorf("image error: %v", st.err)
	}
	st = startStateOf(pod(func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("CreateContainerConfigError")}
	}), false)
	if st.err == nil || errors.Is(st.err, sandbox.ErrUnknownImage) {
		t.Errorf("config error: %v", st.err)
	}
	st = startStateOf(pod(func(p *corev1.Pod) {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: InitContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
	}), false)
	if st.err == nil || !strings.Contains(st.err.Error(), "aster-init") {
		t.Errorf("init container failure: %v", st.err)
	}
	st = startStateOf(pod(func(p *corev1.Pod) {
		p.Spec.NodeName = "n"
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}), false)
	if !st.running || !st.scheduled || st.err != nil {
		t.Errorf("running: %+v", st)
	}
}

func TestEndState(t *testing.T) {
	e := endStateOf(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}}, false)
	if !e.ended || !e.deadline || e.oom {
		t.Errorf("deadline: %+v", e)
	}
	e = endStateOf(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
		{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}},
	}}}, false)
	if !e.ended || !e.oom || e.deadline {
		t.Errorf("oom: %+v", e)
	}
	// init SIGKILLed with no deletion and no deadline: only the OOM killer.
	killed := func(reason string, deleted bool) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, ContainerStatuses: []corev1.ContainerStatus{
			{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137}}},
		}}}
		if deleted {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	if e = endStateOf(killed("", false), false); !e.ended || !e.oom {
		t.Errorf("SIGKILLed init: %+v, want oom", e)
	}
	if e = endStateOf(killed("DeadlineExceeded", false), false); e.oom || !e.deadline {
		t.Errorf("SIGKILLed at the deadline: %+v, want deadline", e)
	}
	if e = endStateOf(killed("", true), false); e.oom {
		t.Errorf("SIGKILLed by deletion: %+v, want no oom", e)
	}
	if e = endStateOf(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false); e.ended {
		t.Errorf("running Pod ended: %+v", e)
	}
	if e = endStateOf(nil, true); !e.ended || !e.gone {
		t.Errorf("deleted: %+v", e)
	}
}

func TestManagedOf(t *testing.T) {
	created := time.Unix(1_700_000_000, 0)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "aster-r-1-abcde", CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{LabelRun: "r-1", LabelDeadline: "1700000600"}}}
	p.Status.Phase = corev1.PodRunning
	if m := managedOf(p); m.ID != p.Name || m.RunID != "r-1" || !m.Deadline.Equal(time.Unix(1_700_000_600, 0)) {
		t.Errorf("running: %+v", m)
	}
	// An ended Pod serves no run: its deadline is when it ended.
	p.Status.Phase = corev1.PodSucceeded
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(created.Add(time.Minute))}}}}
	if m := managedOf(p); !m.Deadline.Equal(created.Add(time.Minute)) {
		t.Errorf("ended: %+v", m)
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	cases := []struct {
		err  error
		want error
	}{
		{apierrors.NewForbidden(gr, "x", fmt.Errorf("exceeded quota: aster-sandboxes, requested: pods=1")), sandbox.ErrBusy},
		{apierrors.NewServiceUnavailable("down"), sandbox.ErrUnavailable},
		{apierrors.NewTooManyRequests("slow down", 1), sandbox.ErrUnavailable},
		{fmt.Errorf("dial tcp 127.0.0.1:6443: %w", syscall.ECONNREFUSED), sandbox.ErrUnavailable},
		{apierrors.NewForbidden(gr, "x", fmt.Errorf("RBAC")), nil},
		{apierrors.NewNotFound(gr, "x"), nil},
	}
	for _, c := range cases {
		got := classify("op", c.err)
		for _, class := range []error{sandbox.ErrBusy, sandbox.ErrUnavailable} {
			if errors.Is(got, class) != (c.want == class) {
				t.Errorf("classify(%v) = %v, want class %v", c.err, got, c.want)
			}
		}
	}
}

// recordingPods and recordingPolicies count the API calls Prepare makes; any
// call fails, as the API server is never meant to be reached in this test.
type recordingPods struct {
	podClient
	calls int
}

func (p *recordingPods) Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error) {
	p.calls++
	return nil, errors.New("pod created")
}

type recordingPolicies struct {
	policyClient
	calls int
}

func (p *recordingPolicies) Get(context.Context, string, metav1.GetOptions) (*networkingv1.NetworkPolicy, error) {
	p.calls++
	return nil, errors.New("policy read")
}

// TestPrepareRefusesZeroLimits: a zero or negative limit that shapes the Pod
// (a zero resource limit or sizeLimit means "none" to the kubelet) is refused
// with ErrInvalidSpec before any API call: no NetworkPolicy check, no Pod.
func TestPrepareRefusesZeroLimits(t *testing.T) {
	r := newTestRuntime(t, nil)
	pods, policies := &recordingPods{}, &recordingPolicies{}
	r.pods, r.policies = pods, policies
	valid := sandbox.Limits{TimeoutMS: 5000, MemoryBytes: 256 << 20, MilliCPUs: 500, Pids: 64, WorkdirBytes: 64 << 20, TmpBytes: 16 << 20}
	for name, set := range map[string]func(*sandbox.Limits, int64){
		"memory":       func(l *sandbox.Limits, v int64) { l.MemoryBytes = v },
		"pids":         func(l *sandbox.Limits, v int64) { l.Pids = v },
		"cpus":         func(l *sandbox.Limits, v int64) { l.MilliCPUs = v },
		"timeout":      func(l *sandbox.Limits, v int64) { l.TimeoutMS = v },
		"workdir_size": func(l *sandbox.Limits, v int64) { l.WorkdirBytes = v },
		"tmp_size":     func(l *sandbox.Limits, v int64) { l.TmpBytes = v },
	} {
		for _, v := range []int64{0, -1} {
			l := valid
			set(&l, v)
			_, err := r.Prepare(t.Context(), sandbox.PrepareOptions{RunID: "r-zero", Image: "img:1", Limits: l, Deadline: time.Now().Add(time.Minute)})
			if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), name) {
				t.Errorf("%s %d: %v, want ErrInvalidSpec naming %s", name, v, err, name)
			}
		}
	}
	if pods.calls != 0 || policies.calls != 0 {
		t.Errorf("refused runs reached the API server: %d pod calls, %d policy calls", pods.calls, policies.calls)
	}
	// The same runtime does go on to the API server with valid limits.
	if _, err := r.Prepare(t.Context(), sandbox.PrepareOptions{RunID: "r-valid", Image: "img:1", Limits: valid, Deadline: time.Now().Add(time.Minute)}); errors.Is(err, sandbox.ErrInvalidSpec) || policies.calls == 0 {
		t.Errorf("valid limits: %v after %d policy calls", err, policies.calls)
	}
}

// An init image named without a registry is never pulled: the runtime sets
// its pull policy to Never, refuses Always, and a Pod whose node lacks it
// fails at once with a message that says how to provide it. A name with a
// registry keeps the operator's policy.
func TestInitImageIsNeverPulledFromAPublicRegistry(t *testing.T) {
	for ref, want := range map[string]bool{
		"aster-init:latest": false, "team/aster-init:v1": false, "docker.io/library/aster-init:v1": true,
		"registry.example/aster-init:v1": true, "localhost:5000/aster-init": true, "localhost/aster-init": true,
	} {
		if got := NamesRegistry(ref); got != want {
			t.Errorf("NamesRegistry(%q) = %v", ref, got)
		}
	}
	r := newTestRuntime(t, func(o *Options) { o.InitImage, o.InitImagePullPolicy = "aster-init:latest", corev1.PullIfNotPresent })
	if r.opts.InitImagePullPolicy != corev1.PullNever {
		t.Errorf("bare init image: pull policy %s", r.opts.InitImagePullPolicy)
	}
	r = newTestRuntime(t, func(o *Options) { o.InitImage = "registry.example/aster-init:v1" })
	if r.opts.InitImagePullPolicy != DefaultImagePullPolicy {
		t.Errorf("init image with a registry: pull policy %s", r.opts.InitImagePullPolicy)
	}
	_, err := New(Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, InitImage: "aster-init:latest", InitImagePullPolicy: corev1.PullAlways})
	if err == nil || !strings.Contains(err.Error(), "images.sh --import") {
		t.Errorf("Always with a bare init image: %v", err)
	}
	st := startStateOf(&corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{
		Name: InitContainerName, Image: "aster-init:latest", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}}}}, false)
	if st.err == nil || !strings.Contains(st.err.Error(), "not on node node-1") || !strings.Contains(st.err.Error(), "--init-image") {
		t.Errorf("missing init image: %v", st.err)
	}
}

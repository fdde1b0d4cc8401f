// Package kubernetes runs Aster sandboxes as Kubernetes Pods through client-go:
// one Pod per run, never reused, with the restricted security profile, memory
// emptyDirs for /work and /tmp, CPU and memory limits equal to requests, an
// activeDeadlineSeconds backstop and the reaper's labels. aster-init reaches the
// Pod through an init container that copies it into a shared emptyDir, and the
// job travels over the attach stream with the same framed protocol as on every
// other runtime (runtimekit.Session), so a Result means the same thing everywhere.
// Aster keeps a deny-all NetworkPolicy for its sandboxes in the namespace.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/asterhq/aster/internal/sandbox"
)

// Labels every sandbox Pod carries. The reaper selects on LabelManaged and
// removes Pods whose LabelDeadline (unix seconds) has passed.
const (
	LabelManaged  = "aster.managed"
	LabelRun      = "aster.run"
	LabelDeadline = "aster.deadline"
)

// Names inside every sandbox Pod.
const (
	// ContainerName runs the job under aster-init.
	ContainerName = "sandbox"
	// InitContainerName copies aster-init into the Pod.
	InitContainerName = "aster-init"
	// InitDir is where aster-init is mounted, read-only, in the sandbox container.
	InitDir = "/.aster"
	// InitPath is aster-init inside the sandbox container.
	InitPath = InitDir + "/init"
	// InitImageBinary is where the init image keeps the aster-init binary.
	InitImageBinary = "/aster-init"
	// NetworkPolicyName is the deny-all policy Aster keeps in its namespace.
	NetworkPolicyName = "aster-sandboxes-deny-all"
	// SandboxUID is the uid and gid every job runs as.
	SandboxUID = 1000
)

// Defaults of the runtime: New applies them to zero Options, and the
// `kubernetes:` section of aster.yaml starts from them.
const (
	DefaultNamespace       = "aster-sandboxes"
	DefaultInitImage       = "aster-init:latest"
	DefaultImagePullPolicy = "IfNotPresent"
	DefaultScheduleTimeout = 30 * time.Second
	// DefaultStartTimeout bounds a Pod's start once scheduled.
	DefaultStartTimeout = 2 * time.Minute
	// DefaultLinger bounds how long aster-init keeps a finished sandbox alive
	// waiting for the host to close its stdin after reading the result.
	DefaultLinger = 10 * time.Second
	// DefaultMaxPods 0: no namespace-wide cap beyond each replica's
	// max-concurrent (a ResourceQuota can add one).
	DefaultMaxPods = 0
)

// Options configure the runtime.
type Options struct {
	// Config reaches the API server (see RESTConfig).
	Config *rest.Config
	// Namespace holds the sandbox Pods and Aster's NetworkPolicy.
	Namespace string
	// RuntimeClass, when set, is every Pod's runtimeClassName (gVisor, Kata).
	RuntimeClass string
	// InitImage carries the static aster-init binary at /aster-init.
	InitImage string
	// InitImagePullPolicy and ImagePullPolicy apply to the init image and to
	// the sandbox images; empty is DefaultImagePullPolicy (IfNotPresent).
	InitImagePullPolicy corev1.PullPolicy
	ImagePullPolicy     corev1.PullPolicy
	// ScheduleTimeout bounds how long a Pod may stay unschedulable before the
	// run fails with the scheduler's reason.
	ScheduleTimeout time.Duration
	// StartTimeout bounds the whole start: schedule, image pull, aster-init.
	StartTimeout time.Duration
	// MaxPods, when above zero, caps the live sandbox Pods in the namespace,
	// whoever created them (every replica of Aster): past it Prepare fails
	// with sandbox.ErrBusy. A ResourceQuota on the namespace enforces the same
	// cap atomically; its refusals are ErrBusy too.
	MaxPods int
	// Labels are added to every Pod (tests use them to find their own); they
	// cannot override the aster.* labels.
	Labels map[string]string
	// Linger is passed to aster-init (-linger); zero uses DefaultLinger.
	Linger time.Duration
	Logger *slog.Logger
}

// podClient is the part of the Pods API the runtime uses.
type podClient interface {
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// policyClient is the part of the NetworkPolicies API the runtime uses.
type policyClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*networkingv1.NetworkPolicy, error)
	Create(ctx context.Context, np *networkingv1.NetworkPolicy, opts metav1.CreateOptions) (*networkingv1.NetworkPolicy, error)
}

var (
	_ podClient    = corev1client.PodInterface(nil)
	_ policyClient = networkingv1client.NetworkPolicyInterface(nil)
)

// Runtime is the Kubernetes implementation of sandbox.Runtime.
type Runtime struct {
	opts     Options
	pods     podClient
	policies policyClient
	attach   attachFunc
	log      *slog.Logger

	policyMu      sync.Mutex
	policyChecked time.Time

	digestMu sync.Mutex
	digests  map[string]string // image → image id seen on a Pod

	deleter *deleter
}

var _ sandbox.Runtime = (*Runtime)(nil)

// RESTConfig loads the client configuration: the kubeconfig at path, or, when
// path is empty, the in-cluster configuration inside a Pod, else the usual
// kubeconfig rules ($KUBECONFIG, ~/.kube/config).
func RESTConfig(path string) (*rest.Config, error) {
	if path == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
		return tune(cfg), nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return tune(cfg), nil
}

// tune raises client-go's default rate limit (5 requests per second), which a
// busy orchestrator creating, watching and deleting Pods passes at once.
func tune(cfg *rest.Config) *rest.Config {
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "aster"
	return cfg
}

// New returns a runtime. It does not contact the API server yet: Check does.
func New(opts Options) (*Runtime, error) {
	if opts.Config == nil {
		return nil, errors.New("kubernetes runtime: no client configuration")
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.InitImage == "" {
		opts.InitImage = DefaultInitImage
	}
	if !NamesRegistry(opts.InitImage) {
		// An init image named without a registry would be pulled from a
		// public registry's library namespace, where anyone may publish
		// a binary of that name that then runs as PID 1 of every sandbox.
		// It comes from the node's own store, or the run is refused.
		if opts.InitImagePullPolicy == corev1.PullAlways {
			return nil, fmt.Errorf("kubernetes: init image %q names no registry, and image pull policy Always would pull it from a public one: %s", opts.InitImage, initImageHowTo)
		}
		opts.InitImagePullPolicy = corev1.PullNever
	}
	if opts.InitImagePullPolicy == "" {
		opts.InitImagePullPolicy = DefaultImagePullPolicy
	}
	if opts.ImagePullPolicy == "" {
		opts.ImagePullPolicy = DefaultImagePullPolicy
	}
	if opts.ScheduleTimeout <= 0 {
		opts.ScheduleTimeout = DefaultScheduleTimeout
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.Linger <= 0 {
		opts.Linger = DefaultLinger
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	core, err := corev1client.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	netw, err := networkingv1client.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	r := &Runtime{
		opts:     opts,
		pods:     core.Pods(opts.Namespace),
		policies: netw.NetworkPolicies(opts.Namespace),
		attach:   newAttacher(opts.Config, core.RESTClient(), opts.Namespace),
		log:      log,
		digests:  map[string]string{},
	}
	r.deleter = newDeleter(r.deletePod, log)
	return r, nil
}

// Close stops the background deletion of Pods whose removal failed, after one
// last attempt.
func (r *Runtime) Close() error {
	r.deleter.close()
	return nil
}

// Namespace returns the namespace the runtime uses.
func (r *Runtime) Namespace() string { return r.opts.Namespace }

// Name implements sandbox.Runtime.
func (r *Runtime) Name() string { return "kubernetes" }

// Check implements sandbox.Runtime: the API server answers, and this identity
// may list Pods in the namespace.
func (r *Runtime) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := r.pods.List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=true", Limit: 1}); err != nil {
		return classify("kubernetes API", err)
	}
	return nil
}

// ImageInfo implements sandbox.Runtime. Images live on the nodes, out of an
// orchestrator's sight until a Pod runs one: the digest is the image id the
// kubelet reported for the last Pod of this image (empty before the first),
// and an image that cannot be pulled fails the run that needs it with
// sandbox.ErrUnknownImage.
func (r *Runtime) ImageInfo(ctx context.Context, image string) (sandbox.ImageInfo, error) {
	r.digestMu.Lock()
	defer r.digestMu.Unlock()
	return sandbox.ImageInfo{Name: image, Digest: r.digests[image]}, nil
}

func (r *Runtime) learnDigest(image, id string) {
	if id == "" {
		return
	}
	r.digestMu.Lock()
	r.digests[image] = id
	r.digestMu.Unlock()
}

// List implements sandbox.Runtime: every Pod with the aster.managed label in
// the namespace. A Pod whose containers have all ended can serve no run any
// more: its deadline is when it ended, if that is earlier than its label.
func (r *Runtime) List(ctx context.Context) ([]sandbox.Managed, error) {
	var out []sandbox.Managed
	opts := metav1.ListOptions{LabelSelector: LabelManaged + "=true", Limit: 500}
	for {
		list, err := r.pods.List(ctx, opts)
		if err != nil {
			return nil, classify("list pods", err)
		}
		for i := range list.Items {
			out = append(out, managedOf(&list.Items[i]))
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func managedOf(p *corev1.Pod) sandbox.Managed {
	m := sandbox.Managed{ID: p.Name, RunID: p.Labels[LabelRun], State: string(p.Status.Phase), Created: p.CreationTimestamp.Time}
	if n, err := strconv.ParseInt(p.Labels[LabelDeadline], 10, 64); err == nil {
		m.Deadline = time.Unix(n, 0)
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		ended := p.CreationTimestamp.Time
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.FinishedAt.After(ended) {
				ended = t.FinishedAt.Time
			}
		}
		if m.Deadline.IsZero() || ended.Before(m.Deadline) {
			m.Deadline = ended
		}
	}
	return m
}

// Remove implements sandbox.Runtime: delete at once; "already gone" is success.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	return r.deletePod(ctx, id)
}

// initImageHowTo says how to give the nodes an init image.
const initImageHowTo = "load it into every node's container runtime (the test cluster of scripts/k8s/up.sh: scripts/k8s/images.sh --import --init-only latest, which make k8s-up runs), or push it to your registry and set --init-image (kubernetes.init_image) to its full name, e.g. registry.example/aster-init:v1"

// NamesRegistry reports whether an image reference names the registry it
// comes from: a first path component with a dot or a port, or localhost
// ("registry.example/aster-init:v1", "localhost:5000/aster-init"). A bare
// name ("aster-init:latest", "team/aster-init") does not.
func NamesRegistry(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}

package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/sandbox/kubernetes"
	"github.com/asterhq/aster/internal/units"
)

// Defaults of the Kubernetes runtime (`--runtime kubernetes`): the kubernetes
// package's own.
const (
	DefaultKubernetesNamespace       = kubernetes.DefaultNamespace
	DefaultKubernetesInitImage       = kubernetes.DefaultInitImage
	DefaultKubernetesImagePullPolicy = kubernetes.DefaultImagePullPolicy
	DefaultKubernetesScheduleTimeout = kubernetes.DefaultScheduleTimeout
	DefaultKubernetesStartTimeout    = kubernetes.DefaultStartTimeout
	DefaultKubernetesLinger          = kubernetes.DefaultLinger
	DefaultKubernetesMaxPods         = kubernetes.DefaultMaxPods
)

// KubernetesConfig is the `kubernetes:` section of aster.yaml.
type KubernetesConfig struct {
	// Kubeconfig is a kubeconfig path; empty uses the in-cluster configuration
	// inside a Pod, else $KUBECONFIG or ~/.kube/config.
	Kubeconfig string `yaml:"kubeconfig"`
	// Namespace holds the sandbox Pods and Aster's deny-all NetworkPolicy.
	Namespace string `yaml:"namespace"`
	// RuntimeClass is the runtimeClassName of every sandbox Pod (gVisor, Kata).
	RuntimeClass string `yaml:"runtime_class"`
	// InitImage is the image whose /aster-init an init container copies into
	// every Pod; it must match this version of Aster.
	InitImage string `yaml:"init_image"`
	// ImagePullPolicy applies to the sandbox images and the init image.
	ImagePullPolicy string `yaml:"image_pull_policy"`
	// ScheduleTimeout bounds how long a Pod may stay unschedulable.
	ScheduleTimeout string `yaml:"schedule_timeout"`
	// MaxPods caps the live sandbox Pods of the namespace across replicas (0: none).
	MaxPods string `yaml:"max_pods"`
}

// KubernetesSettings are the parsed, validated values of a KubernetesConfig.
type KubernetesSettings struct {
	Kubeconfig      string
	Namespace       string
	RuntimeClass    string
	InitImage       string
	ImagePullPolicy string
	ScheduleTimeout time.Duration
	MaxPods         int
}

// DefaultKubernetes returns the kubernetes section with every default filled in.
func DefaultKubernetes() KubernetesConfig {
	return KubernetesConfig{
		Namespace:       DefaultKubernetesNamespace,
		InitImage:       DefaultKubernetesInitImage,
		ImagePullPolicy: DefaultKubernetesImagePullPolicy,
		ScheduleTimeout: DefaultKubernetesScheduleTimeout.String(),
		MaxPods:         strconv.Itoa(DefaultKubernetesMaxPods),
	}
}

// envVars binds the ASTER_* variables of the `kubernetes:` section to the fields of k.
func (k *KubernetesConfig) envVars() []envVar {
	return []envVar{
		str("ASTER_KUBECONFIG", &k.Kubeconfig, "kubeconfig for --runtime kubernetes (default: in-cluster, then $KUBECONFIG)"),
		str("ASTER_K8S_NAMESPACE", &k.Namespace, "namespace of the sandbox Pods"),
		str("ASTER_K8S_RUNTIME_CLASS", &k.RuntimeClass, "RuntimeClass of the sandbox Pods (gVisor, Kata)"),
		str("ASTER_K8S_INIT_IMAGE", &k.InitImage, "image carrying /aster-init, copied into every Pod"),
		str("ASTER_K8S_IMAGE_PULL_POLICY", &k.ImagePullPolicy, "Always, IfNotPresent or Never"),
		str("ASTER_K8S_SCHEDULE_TIMEOUT", &k.ScheduleTimeout, "how long a sandbox Pod may stay unschedulable"),
		str("ASTER_K8S_MAX_PODS", &k.MaxPods, "live sandbox Pods allowed in the namespace across replicas (0: no cap)"),
	}
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// Parse validates the section.
func (k KubernetesConfig) Parse() (KubernetesSettings, error) {
	def := DefaultKubernetes()
	or := func(v, d string) string {
		if v = strings.TrimSpace(v); v == "" {
			return d
		}
		return v
	}
	out := KubernetesSettings{
		Kubeconfig:      strings.TrimSpace(k.Kubeconfig),
		Namespace:       or(k.Namespace, def.Namespace),
		RuntimeClass:    strings.TrimSpace(k.RuntimeClass),
		InitImage:       or(k.InitImage, def.InitImage),
		ImagePullPolicy: or(k.ImagePullPolicy, def.ImagePullPolicy),
	}
	var errs []error
	if !dnsLabel.MatchString(out.Namespace) {
		errs = append(errs, fmt.Errorf("kubernetes namespace %q is not a DNS label", out.Namespace))
	}
	if out.RuntimeClass != "" && (len(out.RuntimeClass) > 253 || !dnsSubdomain.MatchString(out.RuntimeClass)) {
		errs = append(errs, fmt.Errorf("kubernetes runtime class %q is not a valid name", out.RuntimeClass))
	}
	switch out.ImagePullPolicy {
	case "Always", "IfNotPresent", "Never":
	default:
		errs = append(errs, fmt.Errorf("kubernetes image pull policy %q: want Always, IfNotPresent or Never", out.ImagePullPolicy))
	}
	if d, err := units.ParseDuration(or(k.ScheduleTimeout, def.ScheduleTimeout)); err != nil || d < time.Second {
		errs = append(errs, fmt.Errorf("kubernetes schedule timeout %q: want a duration of at least 1s", k.ScheduleTimeout))
	} else {
		out.ScheduleTimeout = d
	}
	if n, err := strconv.Atoi(or(k.MaxPods, def.MaxPods)); err != nil || n < 0 || n > 100_000 {
		errs = append(errs, fmt.Errorf("kubernetes max pods %q: want a whole number from 0", k.MaxPods))
	} else {
		out.MaxPods = n
	}
	return out, errors.Join(errs...)
}

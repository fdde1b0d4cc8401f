package kubernetes

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/asterhq/aster/internal/sandbox"
)

// initVolumeBytes sizes the emptyDir that carries aster-init (a few MiB).
const initVolumeBytes = 32 << 20

// Resources of the init container that copies aster-init: it only copies a
// file, and its limits equal its requests like the sandbox's.
const (
	initContainerMilliCPUs   = 100
	initContainerMemoryBytes = 32 << 20
)

// podSpec builds the Pod for one sandbox. Nothing here comes from a request
// except the image (already checked against the allowlist), the sizes in the
// limits (already validated), the run id (sanitised into a label) and the
// deadline; every hardening setting is fixed.
func (r *Runtime) podSpec(opts sandbox.PrepareOptions, now time.Time) *corev1.Pod {
	l := opts.Limits
	run := labelValue(opts.RunID)
	labels := map[string]string{}
	for k, v := range r.opts.Labels {
		if validation.IsQualifiedName(k) == nil && validation.IsValidLabelValue(v) == nil {
			labels[k] = v
		}
	}
	labels[LabelManaged] = "true"
	labels[LabelRun] = run
	labels[LabelDeadline] = strconv.FormatInt(opts.Deadline.Unix(), 10)

	// The kubelet's own backstop: past the run's deadline label the Pod is
	// stopped whatever Aster does (a crashed orchestrator, a wedged init).
	active := int64(math.Ceil(opts.Deadline.Sub(now).Seconds()))
	active = max(active, 1)

	restricted := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsNonRoot:             ptr(true),
			RunAsUser:                ptr(int64(SandboxUID)),
			RunAsGroup:               ptr(int64(SandboxUID)),
			Privileged:               ptr(false),
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			ProcMount:                ptr(corev1.DefaultProcMount),
		}
	}
	guaranteed := func(milliCPUs, memoryBytes int64) corev1.ResourceRequirements {
		rl := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(milliCPUs, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memoryBytes, resource.BinarySI),
		}
		return corev1.ResourceRequirements{Limits: rl, Requests: rl.DeepCopy()}
	}
	memoryDir := func(name string, size int64) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(size, resource.BinarySI),
		}}}
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: podNamePrefix(run),
			Namespace:    r.opts.Namespace,
			Labels:       labels,
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			ActiveDeadlineSeconds:         &active,
			TerminationGracePeriodSeconds: ptr(int64(1)),
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			HostUsers:                     nil,
			ShareProcessNamespace:         ptr(false),
			Hostname:                      "sandbox",
			// No resolver: DNS is an exfiltration channel, and the sandbox has no
			// network to use one on anyway.
			DNSPolicy: corev1.DNSNone,
			DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"127.0.0.1"}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr(true),
				RunAsUser:      ptr(int64(SandboxUID)),
				RunAsGroup:     ptr(int64(SandboxUID)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			InitContainers: []corev1.Container{{
				Name:                     InitContainerName,
				Image:                    r.opts.InitImage,
				ImagePullPolicy:          r.opts.InitImagePullPolicy,
				Command:                  []string{InitImageBinary, "-install", "/aster/init"},
				Resources:                guaranteed(initContainerMilliCPUs, initContainerMemoryBytes),
				SecurityContext:          restricted(),
				VolumeMounts:             []corev1.VolumeMount{{Name: "aster-init", MountPath: "/aster"}},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           opts.Image,
				ImagePullPolicy: r.opts.ImagePullPolicy,
				Command:         []string{InitPath, "-linger=" + r.opts.Linger.String()},
				WorkingDir:      "/work",
				// The job travels over stdin; the first attach that closes it
				// closes it for good, so init sees the host going away.
				Stdin:           true,
				StdinOnce:       true,
				TTY:             false,
				Resources:       guaranteed(l.MilliCPUs, l.MemoryBytes),
				SecurityContext: restricted(),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "aster-init", MountPath: InitDir, ReadOnly: true},
					{Name: "work", MountPath: "/work"},
					{Name: "tmp", MountPath: "/tmp"},
				},
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: []corev1.Volume{
				memoryDir("aster-init", initVolumeBytes),
				memoryDir("work", l.WorkdirBytes),
				memoryDir("tmp", l.TmpBytes),
			},
		},
	}
	if r.opts.RuntimeClass != "" {
		pod.Spec.RuntimeClassName = ptr(r.opts.RuntimeClass)
	}
	return pod
}

// networkPolicy is the deny-all policy for every sandbox Pod of the namespace:
// it selects them by label and allows no ingress and no egress. It takes
// effect where the cluster's network plugin enforces NetworkPolicy.
func (r *Runtime) networkPolicy() *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:      NetworkPolicyName,
			Namespace: r.opts.Namespace,
			Labels:    map[string]string{"app.kubernetes.io/managed-by": "aster"},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelManaged: "true"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// denies reports whether np denies all ingress and egress to sandbox Pods.
func denies(np *networkingv1.NetworkPolicy) bool {
	s := np.Spec
	sel := s.PodSelector
	selectsSandboxes := len(sel.MatchExpressions) == 0 && (len(sel.MatchLabels) == 0 ||
		(len(sel.MatchLabels) == 1 && sel.MatchLabels[LabelManaged] == "true"))
	var in, out bool
	for _, t := range s.PolicyTypes {
		in = in || t == networkingv1.PolicyTypeIngress
		out = out || t == networkingv1.PolicyTypeEgress
	}
	return selectsSandboxes && in && out && len(s.Ingress) == 0 && len(s.Egress) == 0
}

var labelUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// labelValue turns a run id into a valid label value (63 characters of
// [A-Za-z0-9._-], alphanumeric at both ends).
func labelValue(s string) string {
	s = labelUnsafe.ReplaceAllString(s, "-")
	if len(s) > 63 {
		s = s[:63]
	}
	s = strings.Trim(s, "-._")
	if s == "" {
		return "run"
	}
	return s
}

// podNamePrefix is the generateName of a run's Pod: "aster-" and the run id,
// lower-cased to a DNS label; the API server adds five random characters.
func podNamePrefix(run string) string {
	s := strings.ToLower(labelUnsafe.ReplaceAllString(run, "-"))
	s = strings.ReplaceAll(strings.ReplaceAll(s, "_", "-"), ".", "-")
	s = strings.Trim(s, "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	if s == "" {
		return "aster-"
	}
	return "aster-" + s + "-"
}

func ptr[T any](v T) *T { return &v }

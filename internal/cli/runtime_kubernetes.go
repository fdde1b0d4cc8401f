package cli

import (
	"context"
	"log/slog"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/kubernetes"
)

// addKubernetesFlags adds the global flags of --runtime kubernetes.
func addKubernetesFlags(pf *pflag.FlagSet) {
	pf.String("kubeconfig", "", "kubeconfig for --runtime kubernetes (default: the in-cluster configuration inside a Pod, else $KUBECONFIG or ~/.kube/config)")
	pf.String("namespace", config.DefaultKubernetesNamespace, "namespace of the sandbox Pods for --runtime kubernetes")
	pf.String("runtime-class", "", "RuntimeClass of the sandbox Pods for --runtime kubernetes, e.g. gvisor or kata")
}

// overrideKubernetesFlags applies the flags a user set over the configuration.
func overrideKubernetesFlags(fs *pflag.FlagSet, k *config.KubernetesConfig) {
	for name, dst := range map[string]*string{"kubeconfig": &k.Kubeconfig, "namespace": &k.Namespace, "runtime-class": &k.RuntimeClass} {
		if f := fs.Lookup(name); f != nil && f.Changed {
			*dst = f.Value.String()
		}
	}
}

// newKubernetesRuntime builds the Kubernetes runtime: one Pod per run in the
// configured namespace, aster-init delivered by the init image.
func newKubernetesRuntime(c config.Config, log *slog.Logger) (sandbox.Runtime, func(), error) {
	k, err := c.Kubernetes.Parse()
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	cfg, err := kubernetes.RESTConfig(k.Kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	// client-go reports through klog; its stream errors on a sandbox being
	// torn down are expected, so they go to the debug level of our logger.
	klog.SetSlogLogger(slog.New(debugHandler{log.Handler()}).With("component", "client-go"))
	rt, err := kubernetes.New(kubernetes.Options{
		Config:              cfg,
		Namespace:           k.Namespace,
		RuntimeClass:        k.RuntimeClass,
		InitImage:           k.InitImage,
		InitImagePullPolicy: corev1.PullPolicy(k.ImagePullPolicy),
		ImagePullPolicy:     corev1.PullPolicy(k.ImagePullPolicy),
		ScheduleTimeout:     k.ScheduleTimeout,
		MaxPods:             k.MaxPods,
		Labels:              c.Labels,
		Logger:              log,
	})
	if err != nil {
		return nil, nil, err
	}
	return rt, func() { _ = rt.Close() }, nil
}

// debugHandler lowers every record to the debug level.
type debugHandler struct{ h slog.Handler }

func (d debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(as []slog.Attr) slog.Handler { return debugHandler{d.h.WithAttrs(as)} }
func (d debugHandler) WithGroup(name string) slog.Handler    { return debugHandler{d.h.WithGroup(name)} }

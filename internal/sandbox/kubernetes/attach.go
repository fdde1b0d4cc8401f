package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// attachFunc attaches to the sandbox container of a Pod and streams until the
// container's streams end or ctx is cancelled.
type attachFunc func(ctx context.Context, pod string, streams remotecommand.StreamOptions) error

// newAttacher attaches over WebSocket (the current protocol, which can close
// stdin on its own) and falls back to SPDY for API servers without it, as
// kubectl does.
func newAttacher(cfg *rest.Config, rc rest.Interface, namespace string) attachFunc {
	return func(ctx context.Context, pod string, streams remotecommand.StreamOptions) error {
		u := rc.Post().Namespace(namespace).Resource("pods").Name(pod).SubResource("attach").
			VersionedParams(&corev1.PodAttachOptions{Container: ContainerName, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec).
			URL()
		ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
		if err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
		if err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		if err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		return ex.StreamWithContext(ctx, streams)
	}
}

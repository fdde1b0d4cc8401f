package kubernetes

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// podWatch follows one Pod through the watch API for as long as its sandbox
// lives: a watch that ends (API server restart, timeout) is resumed after a Get,
// with a back-off while the API server is away.
type podWatch struct {
	mu      sync.Mutex
	pod     *corev1.Pod
	gone    bool  // deleted, or never created
	lastErr error // last API error, for diagnostics
	changed chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

// observe starts following the Pod created as initial.
func (r *Runtime) observe(ctx context.Context, initial *corev1.Pod) *podWatch {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &podWatch{pod: initial, changed: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go w.loop(ctx, r.pods, initial.Name, initial.ResourceVersion)
	return w
}

func (w *podWatch) loop(ctx context.Context, pods podClient, name, rv string) {
	defer close(w.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if rv == "" {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				w.markGone()
				return
			case err != nil:
				w.setErr(err)
				if !sleep(ctx, backoff) {
					return
				}
				backoff = min(2*backoff, 2*time.Second)
				continue
			}
			w.update(p)
			rv = p.ResourceVersion
		}
		wi, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:       fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion:     rv,
			AllowWatchBookmarks: true,
		})
		if err != nil {
			w.setErr(err)
			rv = ""
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		rv = w.drain(ctx, wi, rv)
		if rv == "gone" {
			return
		}
	}
}

// drain consumes one watch until it ends; it returns the resource version to
// resume from ("" to re-read the Pod, "gone" when the Pod was deleted).
func (w *podWatch) drain(ctx context.Context, wi watch.Interface, rv string) string {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					w.update(p)
					rv = p.ResourceVersion
				}
			case watch.Deleted:
				w.markGone()
				return "gone"
			case watch.Bookmark:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					rv = p.ResourceVersion
				}
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				w.setErr(err)
				var se *apierrors.StatusError
				if errors.As(err, &se) && se.ErrStatus.Code == http.StatusGone {
					return "" // too old a version: read the Pod again
				}
				return rv
			}
		}
	}
}

func (w *podWatch) update(p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pod = p
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *podWatch) markGone() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone = true
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *podWatch) setErr(err error) {
	w.mu.Lock()
	w.lastErr = err
	w.mu.Unlock()
}

// state returns the latest Pod, whether it is gone, and a channel closed at the
// next change.
func (w *podWatch) state() (*corev1.Pod, bool, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.gone, w.changed
}

func (w *podWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// stop ends the watch and waits for its goroutine.
func (w *podWatch) stop() {
	w.cancel()
	<-w.done
}

// until waits for cond to hold for the Pod (or its absence), ctx to end, or
// the timer to fire; it returns cond's result and whether it held.
func (w *podWatch) until(ctx context.Context, timeout time.Duration, cond func(p *corev1.Pod, gone bool) bool) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		p, gone, changed := w.state()
		if cond(p, gone) {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		case <-w.done:
			p, gone, _ := w.state()
			return cond(p, gone)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

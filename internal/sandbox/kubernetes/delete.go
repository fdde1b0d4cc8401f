package kubernetes

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asterhq/aster/internal/sandbox"
)

// deleteTimeout bounds one delete call.
const deleteTimeout = 15 * time.Second

// deletePod deletes a sandbox Pod at once (no grace: its job is over or must
// end now). A Pod that is already gone is not an error.
func (r *Runtime) deletePod(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, deleteTimeout)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	err := r.pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)), PropagationPolicy: &bg})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return classify("delete pod "+name, err)
}

// Retry pacing of the background deleter.
const (
	retryFirst = time.Second
	retryMax   = 15 * time.Second
	retryFor   = 10 * time.Minute
)

// deleter retries, in the background, the deletion of Pods that could not be
// deleted because the API server was away, so that an outage leaves no Pod
// behind once it ends (the reaper is the backstop after a crash).
type deleter struct {
	del func(ctx context.Context, name string) error
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]time.Time // name → when it was first queued
	wake    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	started bool
}

func newDeleter(del func(ctx context.Context, name string) error, log *slog.Logger) *deleter {
	ctx, cancel := context.WithCancel(context.Background())
	return &deleter{del: del, log: log, pending: map[string]time.Time{}, wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// add queues name for deletion.
func (d *deleter) add(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx.Err() != nil {
		return
	}
	if _, ok := d.pending[name]; !ok {
		d.pending[name] = time.Now()
	}
	if !d.started {
		d.started = true
		go d.loop()
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *deleter) loop() {
	defer close(d.done)
	wait := retryFirst
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.wake:
		case <-time.After(wait):
		}
		d.mu.Lock()
		names := slices.Sorted(maps.Keys(d.pending))
		d.mu.Unlock()
		failed := false
		for _, n := range names {
			err := d.del(d.ctx, n)
			d.mu.Lock()
			switch {
			case err == nil:
				delete(d.pending, n)
				d.log.Info("deleted a sandbox Pod after the API server came back", "pod", n)
			case !errors.Is(err, sandbox.ErrUnavailable) || time.Since(d.pending[n]) > retryFor:
				delete(d.pending, n)
				d.log.Warn("giving up deleting a sandbox Pod; the reaper will remove it", "pod", n, "err", err)
			default:
				failed = true
			}
			d.mu.Unlock()
		}
		if failed {
			wait = min(2*wait, retryMax)
		} else {
			wait = retryFirst
		}
	}
}

// close makes one last attempt for every pending Pod and stops the loop.
func (d *deleter) close() {
	d.mu.Lock()
	started := d.started
	names := slices.Sorted(maps.Keys(d.pending))
	d.mu.Unlock()
	d.cancel()
	if started {
		<-d.done
	}
	for _, n := range names {
		if err := d.del(context.Background(), n); err != nil {
			d.log.Warn("sandbox Pod left for the reaper", "pod", n, "err", err)
		}
	}
}

package sandbox

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// admission bounds the sandboxes alive at once and keeps a bounded FIFO of the
// runs waiting for a slot. A slot is handed directly from a finishing run to the
// first waiter, so the order is first come, first served.
type admission struct {
	mu      sync.Mutex
	max     int
	running int
	waiters *list.List // of *waiter
	queue   int
	obs     Observer
	closed  bool // draining: no new runs, no more waiting
}

// waiter is one queued run. ready is closed when it gets a slot, or when the
// admission is drained (err is then set, under the mutex, before the close).
type waiter struct {
	ready chan struct{}
	err   error
}

// errDraining refuses runs once the Manager is shutting down.
var errDraining = fmt.Errorf("%w: shutting down", ErrUnavailable)

func newAdmission(max, queue int, obs Observer) *admission {
	return &admission{max: max, queue: queue, waiters: list.New(), obs: obs}
}

// acquire takes a slot, waiting in the queue at most timeout.
func (a *admission) acquire(ctx context.Context, timeout time.Duration) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return errDraining
	}
	if a.running < a.max && a.waiters.Len() == 0 {
		a.running++
		a.obs.Running(a.running)
		a.mu.Unlock()
		return nil
	}
	if a.waiters.Len() >= a.queue {
		a.mu.Unlock()
		a.obs.Rejected("queue_full")
		return fmt.Errorf("%w: %d sandboxes running and %d waiting; try again later", ErrBusy, a.max, a.queue)
	}
	w := &waiter{ready: make(chan struct{})}
	el := a.waiters.PushBack(w)
	a.obs.QueueDepth(a.waiters.Len())
	a.mu.Unlock()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var cause error
	select {
	case <-w.ready:
		a.mu.Lock()
		defer a.mu.Unlock()
		return w.err
	case <-timer.C:
		cause = fmt.Errorf("%w: waited %s in the queue for a free sandbox slot", ErrBusy, timeout)
	case <-ctx.Done():
		cause = context.Cause(ctx)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-w.ready:
		// The slot arrived as we gave up: pass it on (unless it was a drain).
		if w.err == nil {
			a.releaseLocked()
		}
	default:
		a.waiters.Remove(el)
		a.obs.QueueDepth(a.waiters.Len())
	}
	if errors.Is(cause, ErrBusy) {
		a.obs.Rejected("queue_timeout")
	}
	return cause
}

// tryAcquire takes a free slot without waiting. It fails when none is free,
// when runs are queued (they come first) and when draining. The warm pool
// fills only this way, so it never delays a run.
func (a *admission) tryAcquire() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.running >= a.max || a.waiters.Len() > 0 {
		return false
	}
	a.running++
	a.obs.Running(a.running)
	return true
}

// release frees a slot or hands it to the first waiter.
func (a *admission) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked()
}

func (a *admission) releaseLocked() {
	if front := a.waiters.Front(); front != nil {
		a.waiters.Remove(front)
		a.obs.QueueDepth(a.waiters.Len())
		close(front.Value.(*waiter).ready)
		return
	}
	a.running--
	a.obs.Running(a.running)
}

// stats returns the running count and queue depth.
func (a *admission) stats() (running, queued int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running, a.waiters.Len()
}

// drain refuses every later acquire and fails the queued ones; running runs
// keep their slots until they release them.
func (a *admission) drain() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for a.waiters.Len() > 0 {
		w := a.waiters.Remove(a.waiters.Front()).(*waiter)
		w.err = errDraining
		close(w.ready)
	}
	a.obs.QueueDepth(0)
}

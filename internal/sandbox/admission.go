package sandbox

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// admission bounds the sandboxes alive at once and the host tasks they may
// create together (hosttasks.go), and keeps a bounded FIFO of the runs
// waiting for both. A finishing run's slot and tasks go to the waiters in
// order: the first waiter is admitted as soon as it fits, and no later one
// passes it, so the order is first come, first served.
type admission struct {
	mu      sync.Mutex
	max     int
	running int
	// budget is the host tasks all admitted sandboxes may be charged
	// together; 0 does not count them. tasks is what they are charged now.
	budget  int64
	tasks   int64
	waiters *list.List // of *waiter
	queue   int
	obs     Observer
	closed  bool // draining: no new runs, no more waiting
}

// waiter is one queued run, charged tasks once admitted. ready is closed
// when it is admitted, or when the admission is drained (err is then set,
// under the mutex, before the close).
type waiter struct {
	ready chan struct{}
	err   error
	tasks int64
}

// errDraining refuses runs once the Manager is shutting down.
var errDraining = fmt.Errorf("%w: shutting down", ErrUnavailable)

func newAdmission(max, queue int, budget int64, obs Observer) *admission {
	return &admission{max: max, queue: queue, budget: budget, waiters: list.New(), obs: obs}
}

// fitsLocked says whether a run charged tasks can be admitted now, ignoring
// the queue.
func (a *admission) fitsLocked(tasks int64) bool {
	return a.running < a.max && (a.budget == 0 || a.tasks+tasks <= a.budget)
}

// takeLocked admits a run charged tasks.
func (a *admission) takeLocked(tasks int64) {
	a.running++
	a.tasks += tasks
	a.obs.Running(a.running)
}

// busyLocked says what is full, for a refusal: the slots, or the host task
// budget when a slot is free but the tasks are not.
func (a *admission) busyLocked(tasks int64) string {
	if a.running < a.max && a.budget > 0 {
		return fmt.Sprintf("host task budget: %d of %d in use, this run needs %d", a.tasks, a.budget, tasks)
	}
	return fmt.Sprintf("%d sandboxes running", a.running)
}

// acquire admits a run charged tasks host tasks, waiting in the queue at
// most timeout. A charge over the whole budget could never be admitted: the
// Manager refuses such a run before it gets here (Manager.checkHostTasks).
func (a *admission) acquire(ctx context.Context, timeout time.Duration, tasks int64) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return errDraining
	}
	if a.waiters.Len() == 0 && a.fitsLocked(tasks) {
		a.takeLocked(tasks)
		a.mu.Unlock()
		return nil
	}
	if a.waiters.Len() >= a.queue {
		busy := a.busyLocked(tasks)
		a.mu.Unlock()
		a.obs.Rejected("queue_full")
		return fmt.Errorf("%w: %s and %d waiting; try again later", ErrBusy, busy, a.queue)
	}
	w := &waiter{ready: make(chan struct{}), tasks: tasks}
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
		a.mu.Lock()
		busy := a.busyLocked(tasks)
		a.mu.Unlock()
		cause = fmt.Errorf("%w: waited %s in the queue for a free sandbox slot (%s)", ErrBusy, timeout, busy)
	case <-ctx.Done():
		cause = context.Cause(ctx)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-w.ready:
		// Admitted as we gave up: pass it on (unless it was a drain).
		if w.err == nil {
			a.releaseLocked(w.tasks)
		}
	default:
		a.waiters.Remove(el)
		a.obs.QueueDepth(a.waiters.Len())
		// The first waiter may have been all that held the next ones back.
		a.admitWaitersLocked()
	}
	if errors.Is(cause, ErrBusy) {
		a.obs.Rejected("queue_timeout")
	}
	return cause
}

// tryAcquire admits a run charged tasks without waiting. It fails when the
// run does not fit, when runs are queued (they come first) and when
// draining. The warm pool fills only this way, so it never delays a run.
func (a *admission) tryAcquire(tasks int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.waiters.Len() > 0 || !a.fitsLocked(tasks) {
		return false
	}
	a.takeLocked(tasks)
	return true
}

// release frees the slot and the tasks of a run charged tasks, and admits
// the waiters that now fit.
func (a *admission) release(tasks int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(tasks)
}

func (a *admission) releaseLocked(tasks int64) {
	a.running--
	a.tasks -= tasks
	a.admitWaitersLocked()
	a.obs.Running(a.running)
}

// admitWaitersLocked admits waiters from the front while the first fits.
func (a *admission) admitWaitersLocked() {
	n := a.waiters.Len()
	for front := a.waiters.Front(); front != nil && !a.closed; front = a.waiters.Front() {
		w := front.Value.(*waiter)
		if !a.fitsLocked(w.tasks) {
			break
		}
		a.waiters.Remove(front)
		a.running++
		a.tasks += w.tasks
		close(w.ready)
	}
	if a.waiters.Len() != n {
		a.obs.QueueDepth(a.waiters.Len())
	}
}

// shortfall says what a run charged tasks lacks to be admitted now: a slot
// (0 or 1) and host tasks (0 when the budget has room).
func (a *admission) shortfall(tasks int64) (slots int, hostTasks int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running >= a.max {
		slots = 1
	}
	if a.budget > 0 {
		hostTasks = max(a.tasks+tasks-a.budget, 0)
	}
	return slots, hostTasks
}

// stats returns the running count, the queue depth and the host tasks the
// running sandboxes are charged.
func (a *admission) stats() (running, queued int, tasks int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running, a.waiters.Len(), a.tasks
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

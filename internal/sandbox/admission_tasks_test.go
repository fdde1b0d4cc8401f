package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAdmissionHostTaskBudget: with slots to spare, a run whose host tasks
// do not fit the budget waits; when the queue is full it is refused with
// the budget's use in the message; a release admits the waiters in order,
// and a small run never passes a large one waiting before it.
func TestAdmissionHostTaskBudget(t *testing.T) {
	a := newAdmission(10, 2, 100, nopObserver{})
	ctx := t.Context()
	for range 2 {
		if err := a.acquire(ctx, time.Second, 40); err != nil {
			t.Fatal(err)
		}
	}
	if a.tryAcquire(40) {
		t.Fatal("tryAcquire admitted 120 host tasks of a budget of 100")
	}
	if !a.tryAcquire(20) {
		t.Fatal("tryAcquire refused 20 host tasks with 20 free")
	}
	a.release(20)
	// A large run waits for the budget; a small one that would fit now
	// waits behind it.
	big, small := make(chan error, 1), make(chan error, 1)
	go func() { big <- a.acquire(ctx, time.Minute, 60) }()
	waitFor(t, func() bool { _, q, _ := a.stats(); return q == 1 })
	go func() { small <- a.acquire(ctx, time.Minute, 10) }()
	waitFor(t, func() bool { _, q, _ := a.stats(); return q == 2 })
	if a.tryAcquire(10) {
		t.Fatal("tryAcquire passed the queue")
	}
	err := a.acquire(ctx, time.Second, 10)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "host task budget: 80 of 100 in use, this run needs 10") {
		t.Fatalf("a run past a full queue: %v", err)
	}
	a.release(40) // 40 in use: the large run (60) fits, then the small one (10) does not
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	if running, queued, tasks := a.stats(); running != 2 || queued != 1 || tasks != 100 {
		t.Fatalf("after the first release: running %d queued %d tasks %d", running, queued, tasks)
	}
	a.release(40)
	if err := <-small; err != nil {
		t.Fatal(err)
	}
	if running, queued, tasks := a.stats(); running != 2 || queued != 0 || tasks != 70 {
		t.Fatalf("after the second release: running %d queued %d tasks %d", running, queued, tasks)
	}
}

// TestAdmissionHostTaskWaiters: a waiter that gives up lets the one behind
// it in when that one fits, and gives back nothing it did not take; a run
// that waited its whole queue time for host tasks says so.
func TestAdmissionHostTaskWaiters(t *testing.T) {
	a := newAdmission(4, 4, 50, nopObserver{})
	if err := a.acquire(t.Context(), time.Second, 30); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	first, behind := make(chan error, 1), make(chan error, 1)
	go func() { first <- a.acquire(ctx, time.Minute, 40) }()
	waitFor(t, func() bool { _, q, _ := a.stats(); return q == 1 })
	go func() { behind <- a.acquire(t.Context(), time.Minute, 20) }()
	waitFor(t, func() bool { _, q, _ := a.stats(); return q == 2 })
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	if err := <-behind; err != nil {
		t.Fatal(err)
	}
	if running, queued, tasks := a.stats(); running != 2 || queued != 0 || tasks != 50 {
		t.Fatalf("running %d queued %d tasks %d", running, queued, tasks)
	}
	err := a.acquire(t.Context(), 10*time.Millisecond, 40)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "host task budget: 50 of 50 in use, this run needs 40") {
		t.Fatalf("timeout: %v", err)
	}
}

func TestBudgetForHostTasks(t *testing.T) {
	for _, c := range []struct{ limit, want int64 }{
		{192_735, 192_735 - 48_183}, // this project's 24 GiB machine: threads-max
		{32_768, 32_768 - 8_192},    // pid_max without systemd
		{8_000, 8_000 - 4_096},      // the reserve's floor
		{4_000, 1},
	} {
		if got := BudgetForHostTasks(c.limit); got != c.want {
			t.Errorf("BudgetForHostTasks(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
	limit, err := HostTaskLimit()
	if err != nil {
		t.Fatal(err)
	}
	if budget, err := HostTaskBudget(); err != nil || budget != BudgetForHostTasks(limit) {
		t.Fatalf("HostTaskBudget = %d, %v; want %d", budget, err, BudgetForHostTasks(limit))
	}
}

package sandbox

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type countObs struct {
	nopObserver
	rejected atomic.Int64
}

func (c *countObs) Rejected(string) { c.rejected.Add(1) }

func TestAdmissionBoundsAndQueue(t *testing.T) {
	obs := &countObs{}
	a := newAdmission(2, 2, 0, obs)
	ctx := t.Context()
	for i := 0; i < 2; i++ {
		if err := a.acquire(ctx, time.Second, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Two more wait; the fifth is refused at once.
	order := make(chan int, 2)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := a.acquire(ctx, 10*time.Second, 0); err != nil {
				t.Error(err)
				return
			}
			order <- i
		}(i)
		waitFor(t, func() bool { _, q, _ := a.stats(); return q == i+1 })
	}
	if err := a.acquire(ctx, time.Second, 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("queue full: %v", err)
	}
	a.release(0)
	if got := <-order; got != 0 {
		t.Fatalf("FIFO broken: %d first", got)
	}
	a.release(0)
	if got := <-order; got != 1 {
		t.Fatalf("FIFO broken: %d second", got)
	}
	wg.Wait()
	if running, queued, _ := a.stats(); running != 2 || queued != 0 {
		t.Fatalf("running %d queued %d", running, queued)
	}
	if obs.rejected.Load() != 1 {
		t.Fatalf("rejections %d", obs.rejected.Load())
	}
}

func TestAdmissionQueueTimeoutAndCancel(t *testing.T) {
	a := newAdmission(1, 5, 0, nopObserver{})
	if err := a.acquire(t.Context(), time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.acquire(t.Context(), 50*time.Millisecond, 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("queue timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- a.acquire(ctx, time.Minute, 0) }()
	waitFor(t, func() bool { _, q, _ := a.stats(); return q == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
	a.release(0)
	if running, queued, _ := a.stats(); running != 0 || queued != 0 {
		t.Fatalf("slot leaked: running %d queued %d", running, queued)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

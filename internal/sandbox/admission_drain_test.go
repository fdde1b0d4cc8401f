package sandbox

import (
	"errors"
	"testing"
	"time"
)

// Drain fails the queued runs and every later one with ErrUnavailable, while
// the runs holding slots keep them until they release.
func TestAdmissionDrain(t *testing.T) {
	a := newAdmission(1, 2, 0, nopObserver{})
	ctx := t.Context()
	if err := a.acquire(ctx, time.Second, 0); err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { queued <- a.acquire(ctx, time.Minute, 0) }()
		waitFor(t, func() bool { _, q, _ := a.stats(); return q == i+1 })
	}
	a.drain()
	for i := 0; i < 2; i++ {
		if err := <-queued; !errors.Is(err, ErrUnavailable) {
			t.Fatalf("queued run after drain: %v", err)
		}
	}
	if err := a.acquire(ctx, time.Second, 0); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("new run after drain: %v", err)
	}
	if running, queued, _ := a.stats(); running != 1 || queued != 0 {
		t.Fatalf("running %d queued %d", running, queued)
	}
	a.release(0)
	if running, _, _ := a.stats(); running != 0 {
		t.Fatalf("running %d after release", running)
	}
}

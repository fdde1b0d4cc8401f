package reaper

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/sandbox"
)

func TestOnce(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	items := []sandbox.Managed{
		{ID: "expired", Deadline: now.Add(-time.Minute)},
		{ID: "in-grace", Deadline: now.Add(-10 * time.Second)},
		{ID: "future", Deadline: now.Add(time.Hour)},
		{ID: "no-label-old", Created: now.Add(-48 * time.Hour)},
		{ID: "no-label-new", Created: now.Add(-time.Hour)},
		{ID: "held", Deadline: now.Add(-time.Hour)},
		{ID: "remove-fails", Deadline: now.Add(-time.Hour)},
	}
	for _, dry := range []bool{true, false} {
		var removed []string
		r := New(Options{
			List: func(context.Context) ([]sandbox.Managed, error) { return items, nil },
			Remove: func(_ context.Context, id string) error {
				if id == "remove-fails" {
					return errors.New("engine said no")
				}
				removed = append(removed, id)
				return nil
			},
			Grace: 30 * time.Second,
			Skip:  func(id string) bool { return id == "held" },
			Now:   func() time.Time { return now },
		})
		actions, err := r.Once(t.Context(), dry)
		if err != nil {
			t.Fatal(err)
		}
		expired := map[string]bool{}
		var failed []string
		for _, a := range actions {
			expired[a.Sandbox.ID] = a.Expired
			if a.Err != nil {
				failed = append(failed, a.Sandbox.ID)
			}
		}
		wantExpired := map[string]bool{"expired": true, "in-grace": false, "future": false, "no-label-old": true, "no-label-new": false, "held": true, "remove-fails": true}
		if d := cmp.Diff(wantExpired, expired); d != "" {
			t.Fatalf("dry=%v expired (-want +got):\n%s", dry, d)
		}
		sort.Strings(removed)
		var want []string
		if !dry {
			want = []string{"expired", "no-label-old"}
			if d := cmp.Diff([]string{"remove-fails"}, failed); d != "" {
				t.Fatalf("failures: %s", d)
			}
		}
		if d := cmp.Diff(want, removed); d != "" {
			t.Fatalf("dry=%v removed (-want +got):\n%s", dry, d)
		}
	}
}

func TestOnceListError(t *testing.T) {
	r := New(Options{List: func(context.Context) ([]sandbox.Managed, error) { return nil, errors.New("down") }, Remove: nil})
	if _, err := r.Once(t.Context(), false); err == nil {
		t.Fatal("list error swallowed")
	}
}

// A hung engine cannot wedge the reaper: every call has its own timeout.
func TestCallTimeout(t *testing.T) {
	r := New(Options{
		List: func(ctx context.Context) ([]sandbox.Managed, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
		CallTimeout: 50 * time.Millisecond,
	})
	start := time.Now()
	if _, err := r.Once(t.Context(), false); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

func TestLoopStopsWithContext(t *testing.T) {
	calls := make(chan struct{}, 10)
	r := New(Options{
		List:   func(context.Context) ([]sandbox.Managed, error) { calls <- struct{}{}; return nil, nil },
		Period: 10 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { r.Loop(ctx); close(done) }()
	<-calls
	<-calls
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Loop did not stop")
	}
}

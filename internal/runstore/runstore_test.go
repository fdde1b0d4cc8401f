package runstore_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/runstore"
	"github.com/asterhq/aster/internal/store/storetest"
)

// backends runs fn over SQLite and, when the test server is there, PostgreSQL;
// open reopens the same store (a restart).
func backends(t *testing.T, fn func(t *testing.T, open func(o runstore.Options) *runstore.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "runs.db")
		fn(t, func(o runstore.Options) *runstore.Store { o.Path = path; return open(t, o) })
	})
	t.Run("postgres", func(t *testing.T) {
		u := storetest.PostgresURL(t)
		fn(t, func(o runstore.Options) *runstore.Store { o.PostgresURL = u; return open(t, o) })
	})
}

func open(t *testing.T, o runstore.Options) *runstore.Store {
	t.Helper()
	s, err := runstore.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A run is kept with its owner: created, started, finished with a result,
// read back by its owner only, listed newest first; a restart keeps the
// finished and fails the ones left running or queued, with the reason.
func TestRunLifecycleAndRestart(t *testing.T) {
	backends(t, func(t *testing.T, reopen func(o runstore.Options) *runstore.Store) {
		ctx := t.Context()
		s := reopen(runstore.Options{})
		now := time.Now()
		for i, id := range []string{"a", "b", "c"} {
			if err := s.Create(ctx, runstore.Run{ID: id, Owner: "alice", Kind: "execute", Created: now.Add(time.Duration(i) * time.Second), CallbackURL: "http://127.0.0.1:1/cb"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Create(ctx, runstore.Run{ID: "z", Owner: "bob", Kind: "test", Created: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx, "a", now); err != nil {
			t.Fatal(err)
		}
		result := json.RawMessage(`{"status":"ok","exit_code":0}`)
		if err := s.Finish(ctx, runstore.Run{ID: "a", State: runstore.StateDone, Result: result, Finished: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx, "b", now); err != nil {
			t.Fatal(err)
		}
		r, err := s.Get(ctx, "alice", "a")
		if err != nil || r.State != runstore.StateDone || string(r.Result) != string(result) || r.Kind != "execute" || r.Started.IsZero() || r.Finished.IsZero() || r.CallbackURL == "" {
			t.Fatalf("a: %+v %v", r, err)
		}
		if _, err := s.Get(ctx, "bob", "a"); !errors.Is(err, runstore.ErrNotFound) {
			t.Fatalf("another owner read alice's run: %v", err)
		}
		list, err := s.List(ctx, "alice", 2)
		if err != nil || len(list) != 2 || list[0].ID != "c" || list[1].ID != "b" || list[0].Result != nil {
			t.Fatalf("list %+v %v", list, err)
		}
		s.Close()

		s = reopen(runstore.Options{})
		for id, want := range map[string]runstore.State{"a": runstore.StateDone, "b": runstore.StateError, "c": runstore.StateError} {
			r, err := s.Get(ctx, "alice", id)
			if err != nil || r.State != want {
				t.Fatalf("%s after restart: %+v %v", id, r, err)
			}
			if want == runstore.StateError && (!strings.Contains(r.ErrorMessage, "server stopped") || r.Finished.IsZero()) {
				t.Errorf("%s: %+v", id, r)
			}
		}
	})
}

// Results are kept for the retention and within the size bound: the oldest
// finished go first; unfinished runs are never pruned.
func TestRetention(t *testing.T) {
	backends(t, func(t *testing.T, reopen func(o runstore.Options) *runstore.Store) {
		ctx := t.Context()
		s := reopen(runstore.Options{MaxBytes: 250, Retention: time.Hour})
		now := time.Now()
		big := json.RawMessage(`"` + strings.Repeat("x", 98) + `"`) // 100 bytes
		for i, id := range []string{"old", "r1", "r2", "r3", "open"} {
			if err := s.Create(ctx, runstore.Run{ID: id, Owner: "o", Kind: "execute", Created: now.Add(time.Duration(i) * time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Finish(ctx, runstore.Run{ID: "old", State: runstore.StateDone, Result: big, Finished: now.Add(-2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "o", "old"); !errors.Is(err, runstore.ErrNotFound) {
			t.Fatalf("a result past its retention is kept: %v", err)
		}
		for i, id := range []string{"r1", "r2", "r3"} {
			if err := s.Finish(ctx, runstore.Run{ID: id, State: runstore.StateDone, Result: big, Finished: now.Add(time.Duration(i) * time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Get(ctx, "o", "r1"); !errors.Is(err, runstore.ErrNotFound) {
			t.Errorf("the oldest result is kept past the size bound: %v", err)
		}
		for _, id := range []string{"r2", "r3", "open"} {
			if _, err := s.Get(ctx, "o", id); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}
	})
}

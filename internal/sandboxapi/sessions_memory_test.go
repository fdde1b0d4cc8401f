package sandboxapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
)

// TestSessionMemorySnapshotHTTP (gVisor): POST …/snapshot {"memory": true}
// checkpoints a running session; forks from it start with a process's
// memory and diverge; another token gets 404; the checkpoints count toward
// the store's cap and go with LRU and DELETE, leaving nothing on disk.
func TestSessionMemorySnapshotHTTP(t *testing.T) {
	toks := mustTokens(t, "token-for-memory-aaaa\ntoken-for-memory-bbbb\n")
	snaps := filepath.Join(t.TempDir(), "snaps")
	rt := ocitest.GVisor(t)
	h := newHarness(t, harnessOpts{maxConcurrent: 8, runtime: rt, server: func(o *Options) {
		o.Tokens = toks
		o.SnapshotDir = snaps
	}})
	h.token = "token-for-memory-aaaa"
	ctx := context.Background()
	create := func(req api.SessionRequest) string {
		t.Helper()
		t0 := time.Now()
		s, base := h.createSession(req)
		t.Logf("session %s created in %v", s.ID, time.Since(t0))
		return base
	}
	exec := func(base string, argv ...string) api.Result {
		t.Helper()
		resp, body := h.postJSON(base+"/exec", api.SessionExecRequest{Argv: argv})
		res := decodeOK[api.Result](t, resp, body)
		if res.Status != sandbox.StatusOK {
			t.Fatalf("exec %q: %+v", argv, res)
		}
		return res
	}
	ask := func(base string) int64 {
		t.Helper()
		out := exec(base, "sh", "-c", ocitest.AskHolder).Stdout
		n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			t.Fatalf("answer %q", out)
		}
		return n
	}
	snapshot := func(base string) api.SessionSnapshot {
		t.Helper()
		t0 := time.Now()
		resp, body := h.postJSON(base+"/snapshot", api.SnapshotRequest{Memory: true})
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("memory snapshot: %d %s", resp.StatusCode, body)
		}
		var sn api.SessionSnapshot
		if err := json.Unmarshal(body, &sn); err != nil || !sn.Memory || sn.SizeBytes <= 0 {
			t.Fatalf("memory snapshot answered %s", body)
		}
		t.Logf("memory snapshot of %d bytes in %v", sn.SizeBytes, time.Since(t0))
		return sn
	}
	stored := func() []string {
		t.Helper()
		entries, err := os.ReadDir(snaps)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}

	orig := create(api.SessionRequest{Files: map[string]api.File{"holder.py": {Content: ocitest.MemoryHolder}}})
	exec(orig, "sh", "-c", "setsid python3 /work/holder.py >/dev/null 2>&1 </dev/null & sleep 0.5")
	a := ask(orig)
	first := snapshot(orig)
	if got := stored(); len(got) != 1 || got[0] != first.ID+".mem" {
		t.Fatalf("stored after the snapshot: %v", got)
	}
	if got := ask(orig); got != a+1 {
		t.Fatalf("original after its checkpoint answered %d, want %d", got, a+1)
	}

	// A fork keeps its snapshot's limits and image.
	resp, body := h.postJSON(api.RouteSessions, api.SessionRequest{FromSnapshot: first.ID, Limits: api.Limits{Memory: "256m"}})
	errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec")
	forkA := create(api.SessionRequest{FromSnapshot: first.ID})
	forkB := create(api.SessionRequest{FromSnapshot: first.ID})
	if x, y := ask(forkA), ask(forkB); x != a+1 || y != a+1 {
		t.Fatalf("forks answered %d and %d, want %d (the memory at the checkpoint)", x, y, a+1)
	}
	exec(forkA, "sh", "-c", "echo 7 > /work/set.tmp; mv /work/set.tmp /work/set; sleep 0.2")
	if x, y := ask(forkA), ask(forkB); x != 7 || y != a+2 {
		t.Fatalf("after setting fork A: A answered %d (want 7), B %d (want %d)", x, y, a+2)
	}

	// Another token: 404 for the snapshot, as for an unknown one.
	h.token = "token-for-memory-bbbb"
	resp, body = h.postJSON(api.RouteSessions, api.SessionRequest{FromSnapshot: first.ID})
	errorOf(t, resp, body, http.StatusNotFound, "not_found")
	resp, body = h.do(ctx, http.MethodDelete, api.RouteSnapshots+"/"+first.ID, "", nil)
	errorOf(t, resp, body, http.StatusNotFound, "not_found")
	h.token = "token-for-memory-aaaa"

	// The cap: room for one checkpoint and a half, so a second drops the
	// first (the least recently used), files and all.
	h.srv.snapshots.mu.Lock()
	h.srv.snapshots.max = first.SizeBytes * 3 / 2
	h.srv.snapshots.mu.Unlock()
	second := snapshot(forkB)
	if got := stored(); len(got) != 1 || got[0] != second.ID+".mem" {
		t.Fatalf("stored after the second snapshot: %v, want only %s", got, second.ID)
	}
	resp, body = h.postJSON(api.RouteSessions, api.SessionRequest{FromSnapshot: first.ID})
	errorOf(t, resp, body, http.StatusNotFound, "not_found")
	forkC := create(api.SessionRequest{FromSnapshot: second.ID})
	if got := ask(forkC); got != a+3 {
		t.Fatalf("a fork of fork B answered %d, want %d", got, a+3)
	}
	resp, _ = h.do(ctx, http.MethodDelete, api.RouteSnapshots+"/"+second.ID, "", nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete snapshot: %d", resp.StatusCode)
	}
	if got := stored(); len(got) != 0 {
		t.Fatalf("stored after DELETE: %v", got)
	}
	for _, base := range []string{orig, forkA, forkB, forkC} {
		if resp, _ := h.do(ctx, http.MethodDelete, base, "", nil); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("delete %s: %d", base, resp.StatusCode)
		}
	}
	if list, err := rt.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("after the deletes the runtime lists %v (%v)", list, err)
	}
}

// TestSessionMemorySnapshotRefusedHTTP: docker keeps no memory of a
// session: 400 that names gvisor, and nothing stored.
func TestSessionMemorySnapshotRefusedHTTP(t *testing.T) {
	snaps := filepath.Join(t.TempDir(), "snaps")
	h := newHarness(t, harnessOpts{server: func(o *Options) { o.SnapshotDir = snaps }})
	resp, body := h.postJSON(api.RouteSessions, api.SessionRequest{})
	var s api.Session
	if err := json.Unmarshal(body, &s); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	defer h.do(context.Background(), http.MethodDelete, api.RouteSessions+"/"+s.ID, "", nil)
	resp, body = h.postJSON(api.RouteSessions+"/"+s.ID+"/snapshot", api.SnapshotRequest{Memory: true})
	if d := errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec"); !strings.Contains(d.Message, "gvisor") {
		t.Fatalf("refusal does not say what would do: %s", body)
	}
	if entries, _ := os.ReadDir(snaps); len(entries) != 0 {
		t.Fatalf("stored: %v", entries)
	}
	// Without memory, the same route still takes /work.
	resp, body = h.postJSON(api.RouteSessions+"/"+s.ID+"/snapshot", api.SnapshotRequest{})
	var sn api.SessionSnapshot
	if err := json.Unmarshal(body, &sn); err != nil || resp.StatusCode != http.StatusCreated || sn.Memory || sn.SizeBytes == 0 {
		t.Fatalf("a /work snapshot: %d %s", resp.StatusCode, body)
	}
}

package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
)

// The session routes end to end on the real engine: create with files, a
// file written in one call and run in the next, state kept, per-exec
// statuses, the file API's confinement, another token's 404, the per-token
// cap, and DELETE.
func TestSessionsHTTP(t *testing.T) {
	sessionsHTTPCase(t, nil)
}

// TestSessionsHTTPMicroVM: the same routes on the microvm runtime, each
// session a VM whose init serves every call over its port.
func TestSessionsHTTPMicroVM(t *testing.T) {
	sessionsHTTPCase(t, microvmtest.Runtime(t))
}

// sessionsHTTPCase runs the session routes on rt (nil: the Docker engine).
func sessionsHTTPCase(t *testing.T, rt sandbox.Runtime) {
	toks := mustTokens(t, "token-for-sessions-aaaa\ntoken-for-sessions-bbbb\n")
	h := newHarness(t, harnessOpts{runtime: rt, server: func(o *Options) { o.Tokens = toks; o.MaxSessionsPerToken = 1 }})
	h.token = "token-for-sessions-aaaa"
	ctx := context.Background()

	sess, base, body := h.createSessionBody(api.SessionRequest{
		Files: map[string]api.File{"greet.txt": {Content: "hi from create\n"}},
		TTL:   "5m", IdleTimeout: "2m",
	})
	if !strings.HasPrefix(sess.ID, "s-") || len(sess.ID) != 34 {
		t.Fatalf("create answered %s", body)
	}

	// A second session of the same token is past its cap.
	resp, body := h.postJSON(api.RouteSessions, api.SessionRequest{})
	errorOf(t, resp, body, http.StatusTooManyRequests, "busy")

	resp, body = h.do(ctx, http.MethodPut, base+"/files/src/run.sh", api.ContentTypeOctets, strings.NewReader("cat greet.txt\necho \"$1\" > /tmp/state\n"))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("put: %d %s", resp.StatusCode, body)
	}
	exec := func(req api.SessionExecRequest) api.Result {
		t.Helper()
		resp, body := h.postJSON(base+"/exec", req)
		return decodeOK[api.Result](t, resp, body)
	}
	if res := exec(api.SessionExecRequest{Argv: []string{"sh", "src/run.sh", "kept"}}); res.Status != sandbox.StatusOK || res.Stdout != "hi from create\n" {
		t.Fatalf("run the written file: %+v", res)
	}
	if res := exec(api.SessionExecRequest{Argv: []string{"cat", "/tmp/state"}}); res.Stdout != "kept\n" {
		t.Fatalf("state across calls: %+v", res)
	}
	if res := exec(api.SessionExecRequest{Argv: []string{"sleep", "20"}, Timeout: "500ms"}); res.Status != sandbox.StatusTimeout {
		t.Fatalf("timeout per exec: %+v", res)
	}
	if res := exec(api.SessionExecRequest{Argv: []string{"sh", "-c", "echo $GREETING"}, Env: map[string]string{"GREETING": "env"}}); res.Stdout != "env\n" {
		t.Fatalf("env per exec: %+v", res)
	}

	resp, body = h.do(ctx, http.MethodGet, base+"/files/src/run.sh", "", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "cat greet.txt") {
		t.Fatalf("get: %d %q", resp.StatusCode, body)
	}
	resp, body = h.do(ctx, http.MethodGet, base+"/files", "", nil)
	list := decodeOK[api.FileList](t, resp, body)
	if len(list.Entries) != 2 || list.Entries[0].Name != "greet.txt" || list.Entries[1].Name != "src" || list.Entries[1].Type != "dir" {
		t.Fatalf("list /work: %+v", list)
	}
	resp, body = h.do(ctx, http.MethodGet, base+"/files/src", "", nil)
	if list := decodeOK[api.FileList](t, resp, body); len(list.Entries) != 1 || list.Entries[0].Name != "run.sh" {
		t.Fatalf("list src: %+v", list)
	}
	resp, body = h.do(ctx, http.MethodPut, base+"/files/a/../../etc/x", api.ContentTypeOctets, strings.NewReader("x"))
	errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec")
	resp, body = h.do(ctx, http.MethodGet, base+"/files/missing", "", nil)
	errorOf(t, resp, body, http.StatusNotFound, "not_found")

	// Another token sees nothing of it: 404 as for an unknown id.
	h.token = "token-for-sessions-bbbb"
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, base}, {http.MethodDelete, base}, {http.MethodGet, base + "/files/src/run.sh"}, {http.MethodGet, base + "/files"},
	} {
		resp, body := h.do(ctx, c.method, c.path, "", nil)
		errorOf(t, resp, body, http.StatusNotFound, "not_found")
	}
	resp, body = h.postJSON(base+"/exec", api.SessionExecRequest{Argv: []string{"true"}})
	errorOf(t, resp, body, http.StatusNotFound, "not_found")
	resp, body = h.do(ctx, http.MethodGet, api.RouteSessions, "", nil)
	if l := decodeOK[api.SessionList](t, resp, body); len(l.Sessions) != 0 {
		t.Fatalf("another token lists %+v", l)
	}
	resp, body = h.do(ctx, http.MethodGet, api.RouteSessions+"/s-00000000000000000000000000000000", "", nil)
	errorOf(t, resp, body, http.StatusNotFound, "not_found")

	h.token = "token-for-sessions-aaaa"
	resp, body = h.do(ctx, http.MethodGet, api.RouteSessions, "", nil)
	if l := decodeOK[api.SessionList](t, resp, body); len(l.Sessions) != 1 || l.Sessions[0].ID != sess.ID {
		t.Fatalf("owner lists %+v", l)
	}
	resp, body = h.do(ctx, http.MethodDelete, base, "", nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	resp, body = h.do(ctx, http.MethodGet, base, "", nil)
	errorOf(t, resp, body, http.StatusNotFound, "not_found")
	if st := h.mgr.Stats(); st.Running != 0 {
		t.Fatalf("a deleted session still holds a slot: %+v", st)
	}
	// Its place under the cap is free again.
	resp, body = h.postJSON(api.RouteSessions, api.SessionRequest{TTL: "1m"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create after delete: %d %s", resp.StatusCode, body)
	}
	var again api.Session
	_ = json.Unmarshal(body, &again)
	h.do(ctx, http.MethodDelete, api.RouteSessions+"/"+again.ID, "", nil)
}

// Archives, pause and snapshots over HTTP on the real engine: a directory's
// tar out and in, a pause that any call ends, a snapshot forked into two
// sessions that then differ, and another token refused the snapshot.
func TestSessionSnapshotsHTTP(t *testing.T) {
	toks := mustTokens(t, "token-for-snapshots-aaa\ntoken-for-snapshots-bbb\n")
	h := newHarness(t, harnessOpts{maxConcurrent: 8, server: func(o *Options) {
		o.Tokens = toks
		o.SnapshotDir = t.TempDir() + "/snaps"
		o.MaxSessions = 3
	}})
	h.token = "token-for-snapshots-aaa"
	ctx := context.Background()
	create := h.createSession
	exec := func(base string, argv ...string) api.Result {
		t.Helper()
		resp, body := h.postJSON(base+"/exec", api.SessionExecRequest{Argv: argv})
		return decodeOK[api.Result](t, resp, body)
	}
	_, base := create(api.SessionRequest{Files: map[string]api.File{"app/main.py": {Content: "print('v1')\n"}}})

	// The directory's archive out, and in under another name.
	resp, body := h.do(ctx, http.MethodGet, base+"/files/app?format=tar", "", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != api.ContentTypeTar {
		t.Fatalf("get archive: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, _ = h.do(ctx, http.MethodPut, base+"/files/copy?format=tar", api.ContentTypeTar, bytes.NewReader(body))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("put archive: %d", resp.StatusCode)
	}
	if res := exec(base, "python3", "copy/main.py"); res.Stdout != "v1\n" {
		t.Fatalf("run the unpacked copy: %+v", res)
	}
	resp, body = h.do(ctx, http.MethodPut, base+"/files?format=tar", api.ContentTypeTar, strings.NewReader("not a tar archive at all, just text that goes on and on"))
	errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec")

	// Pause, then an exec resumes it.
	resp, body = h.postJSON(base+"/pause", map[string]any{})
	errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec")
	resp, body = h.do(ctx, http.MethodPost, base+"/pause", "", nil)
	if s := decodeOK[api.Session](t, resp, body); !s.Paused {
		t.Fatalf("pause answered %s", body)
	}
	if live, paused := h.metric("aster_sessions_live"), h.metric("aster_sessions_paused"); live != 1 || paused != 1 {
		t.Fatalf("metrics: %v live, %v paused; want 1 and 1", live, paused)
	}
	if res := exec(base, "cat", "app/main.py"); res.Status != sandbox.StatusOK {
		t.Fatalf("exec in a paused session: %+v", res)
	}
	resp, body = h.do(ctx, http.MethodGet, base, "", nil)
	if s := decodeOK[api.Session](t, resp, body); s.Paused {
		t.Fatalf("still paused after an exec: %s", body)
	}

	// Snapshot, then two forks that start alike and then differ.
	resp, body = h.do(ctx, http.MethodPost, base+"/snapshot", "", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("snapshot: %d %s", resp.StatusCode, body)
	}
	var snap api.SessionSnapshot
	if err := json.Unmarshal(body, &snap); err != nil || !strings.HasPrefix(snap.ID, "snap-") || snap.SizeBytes == 0 {
		t.Fatalf("snapshot answered %s", body)
	}
	_, forkA := create(api.SessionRequest{FromSnapshot: snap.ID})
	_, forkB := create(api.SessionRequest{FromSnapshot: snap.ID, Files: map[string]api.File{"app/main.py": {Content: "print('v2')\n"}}})
	if a, b := exec(forkA, "python3", "app/main.py"), exec(forkB, "python3", "app/main.py"); a.Stdout != "v1\n" || b.Stdout != "v2\n" {
		t.Fatalf("forks: %q %q", a.Stdout, b.Stdout)
	}
	if res := exec(forkA, "cat", "copy/main.py"); res.Stdout != "print('v1')\n" {
		t.Fatalf("fork lacks the unpacked copy: %+v", res)
	}
	// The server-wide cap (3 here), whichever token asks.
	h.token = "token-for-snapshots-bbb"
	resp, body = h.postJSON(api.RouteSessions, api.SessionRequest{})
	if d := errorOf(t, resp, body, http.StatusTooManyRequests, "busy"); !strings.Contains(d.Message, "--max-sessions") {
		t.Fatalf("cap answer does not name the setting: %s", body)
	}
	h.token = "token-for-snapshots-aaa"

	// Another token: 404 for the snapshot, as for an unknown one, and an empty list.
	h.token = "token-for-snapshots-bbb"
	resp, body = h.postJSON(api.RouteSessions, api.SessionRequest{FromSnapshot: snap.ID})
	errorOf(t, resp, body, http.StatusNotFound, "not_found")
	resp, body = h.do(ctx, http.MethodDelete, api.RouteSnapshots+"/"+snap.ID, "", nil)
	errorOf(t, resp, body, http.StatusNotFound, "not_found")
	resp, body = h.do(ctx, http.MethodGet, api.RouteSnapshots, "", nil)
	if l := decodeOK[api.SessionSnapshotList](t, resp, body); len(l.Snapshots) != 0 {
		t.Fatalf("another token lists %s", body)
	}

	h.token = "token-for-snapshots-aaa"
	resp, body = h.do(ctx, http.MethodGet, api.RouteSnapshots, "", nil)
	if l := decodeOK[api.SessionSnapshotList](t, resp, body); len(l.Snapshots) != 1 || l.Snapshots[0].ID != snap.ID {
		t.Fatalf("list: %s", body)
	}
	resp, _ = h.do(ctx, http.MethodDelete, api.RouteSnapshots+"/"+snap.ID, "", nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete snapshot: %d", resp.StatusCode)
	}
	resp, body = h.postJSON(api.RouteSessions, api.SessionRequest{FromSnapshot: snap.ID})
	errorOf(t, resp, body, http.StatusNotFound, "not_found")

	// Three live, none paused; one deleted counts as ended, and every exec is timed.
	if live, paused := h.metric("aster_sessions_live"), h.metric("aster_sessions_paused"); live != 3 || paused != 0 {
		t.Fatalf("metrics: %v live, %v paused; want 3 and 0", live, paused)
	}
	h.do(ctx, http.MethodDelete, forkB, "", nil)
	if live, ended := h.metric("aster_sessions_live"), h.metric(`aster_sessions_ended_total{reason="deleted"}`); live != 2 || ended != 1 {
		t.Fatalf("metrics after a delete: %v live, %v ended", live, ended)
	}
	if n := h.metric(`aster_session_exec_seconds_count{status="ok"}`); n < 5 {
		t.Fatalf("exec histogram counted %v ok execs", n)
	}
}

package sandboxapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// The session routes end to end on the real engine: create with files, a
// file written in one call and run in the next, state kept, per-exec
// statuses, the file API's confinement, another token's 404, the per-token
// cap, and DELETE.
func TestSessionsHTTP(t *testing.T) {
	toks, err := ParseTokens(strings.NewReader("token-for-sessions-aaaa\ntoken-for-sessions-bbbb\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{server: func(o *Options) { o.Tokens = toks; o.MaxSessionsPerToken = 1 }})
	h.token = "token-for-sessions-aaaa"
	ctx := context.Background()

	resp, body := h.postJSON(api.RouteSessions, api.SessionRequest{
		Files: map[string]api.File{"greet.txt": {Content: "hi from create\n"}},
		TTL:   "5m", IdleTimeout: "2m",
	})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var sess api.Session
	if err := json.Unmarshal(body, &sess); err != nil || !strings.HasPrefix(sess.ID, "s-") || len(sess.ID) != 34 {
		t.Fatalf("create answered %s (%v)", body, err)
	}
	base := api.RouteSessions + "/" + sess.ID
	t.Cleanup(func() { h.do(ctx, http.MethodDelete, base, "", nil) })

	// A second session of the same token is past its cap.
	resp, body = h.postJSON(api.RouteSessions, api.SessionRequest{})
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

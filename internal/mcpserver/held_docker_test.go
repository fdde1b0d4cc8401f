package mcpserver

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

func callSession(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	return call(t, cs, tool, args)
}

func mustOK(t *testing.T, res *mcp.CallToolResult, what string) {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: %s", what, textOf(res))
	}
}

// An agent's walk through the session tools on the real engine: a file
// written in one call runs in the next, state stays, named sessions are kept
// apart, another connection cannot reach them, and the connection's end
// destroys them.
func TestSessionToolsDocker(t *testing.T) {
	e := newDockerEnv(t, 4, 8)
	cs := e.httpSession(t, nil)

	// The default session: no session_id anywhere.
	mustOK(t, callSession(t, cs, "session_write_file", map[string]any{"path": "app/main.py", "content": "import sys\nprint(open('app/data.txt').read().strip() * 2)\n"}), "write")
	mustOK(t, callSession(t, cs, "session_write_file", map[string]any{"path": "app/data.txt", "content": "ab\n"}), "write data")
	res := callSession(t, cs, "session_exec", map[string]any{"argv": []string{"python3", "app/main.py"}})
	out := structured[sandbox.WireResult](t, res)
	if res.IsError || out.Status != "ok" || out.Stdout != "abab\n" {
		t.Fatalf("exec of a file written earlier: %+v\n%s", out, textOf(res))
	}
	// State left by one command is there for the next, /tmp included.
	mustOK(t, callSession(t, cs, "session_exec", map[string]any{"argv": []string{"sh", "-c", "echo kept > /tmp/state && echo made > made.txt"}}), "state")
	res = callSession(t, cs, "session_exec", map[string]any{"argv": []string{"cat", "/tmp/state", "made.txt"}})
	if out := structured[sandbox.WireResult](t, res); out.Stdout != "kept\nmade\n" {
		t.Fatalf("state across calls: %+v", out)
	}
	// Reading back: text as content, bytes as base64.
	res = callSession(t, cs, "session_read_file", map[string]any{"path": "made.txt"})
	if f := structured[SessionFile](t, res); f.Content != "made\n" || f.ContentBase64 != "" {
		t.Fatalf("read text: %+v", f)
	}
	bin := []byte{0, 0xff, 0xfe, 'x'}
	mustOK(t, callSession(t, cs, "session_write_file", map[string]any{"path": "blob.bin", "content_base64": base64.StdEncoding.EncodeToString(bin)}), "write binary")
	res = callSession(t, cs, "session_read_file", map[string]any{"path": "blob.bin"})
	if f := structured[SessionFile](t, res); f.ContentBase64 != base64.StdEncoding.EncodeToString(bin) || f.Content != "" || f.Size != 4 {
		t.Fatalf("read binary: %+v", f)
	}
	res = callSession(t, cs, "session_list_files", map[string]any{"path": "app"})
	if l := structured[SessionFiles](t, res); len(l.Entries) != 2 || l.Entries[0].Name != "data.txt" || l.Entries[1].Name != "main.py" {
		t.Fatalf("listing: %+v", l)
	}
	// A command's own failure is a result, not a broken session.
	res = callSession(t, cs, "session_exec", map[string]any{"argv": []string{"sleep", "10"}, "timeout": "500ms"})
	if out := structured[sandbox.WireResult](t, res); out.Status != "timeout" {
		t.Fatalf("timeout: %+v", out)
	}
	res = callSession(t, cs, "session_exec", map[string]any{"argv": []string{"cat", "made.txt"}})
	if out := structured[sandbox.WireResult](t, res); out.Status != "ok" {
		t.Fatalf("session after a timeout: %+v", out)
	}
	// Paths out of /work are refused before anything runs.
	for _, p := range []string{"../etc/x", "/etc/passwd", ""} {
		if res := callSession(t, cs, "session_write_file", map[string]any{"path": p, "content": "x"}); !res.IsError || !strings.Contains(textOf(res), "invalid_spec") {
			t.Fatalf("write to %q: %s", p, textOf(res))
		}
	}

	// A named session is a sandbox of its own.
	res = callSession(t, cs, "session_create", map[string]any{"ttl": "5m", "idle_timeout": "2m", "env": map[string]string{"GREETING": "hi"}})
	mustOK(t, res, "create")
	named := structured[SessionInfo](t, res)
	if !strings.HasPrefix(named.SessionID, "s-") || named.IdleTimeout != "2m" {
		t.Fatalf("created: %+v", named)
	}
	res = callSession(t, cs, "session_exec", map[string]any{"session_id": named.SessionID, "argv": []string{"sh", "-c", "echo $GREETING; ls /work; cat /tmp/state 2>&1; true"}})
	if out := structured[sandbox.WireResult](t, res); out.Stdout != "hi\ncat: /tmp/state: No such file or directory\n" {
		t.Fatalf("a named session sees another's files or lacks its env: %q", out.Stdout)
	}
	res = callSession(t, cs, "session_list", nil)
	list := structured[SessionList](t, res)
	if len(list.Sessions) != 2 || !list.Sessions[0].Default || list.Sessions[1].SessionID != named.SessionID {
		t.Fatalf("session_list: %+v", list)
	}
	defaultID := list.Sessions[0].SessionID
	// The per-connection cap (2 in this server).
	if res := callSession(t, cs, "session_create", nil); !res.IsError || !strings.Contains(textOf(res), "busy") {
		t.Fatalf("third session: %s", textOf(res))
	}

	// Another connection cannot name them: the same answer as an unknown id.
	other := e.httpSession(t, nil)
	for _, id := range []string{named.SessionID, "s-00000000000000000000000000000000"} {
		res := callSession(t, other, "session_exec", map[string]any{"session_id": id, "argv": []string{"true"}})
		if !res.IsError || !strings.Contains(textOf(res), "not_found") {
			t.Fatalf("another connection's exec in %s: %s", id, textOf(res))
		}
	}

	// Closing a session destroys its sandbox; its id is then unknown.
	mustOK(t, callSession(t, cs, "session_close", map[string]any{"session_id": named.SessionID}), "close")
	waitFor(t, 30*time.Second, "closed session's sandbox gone", func() bool { return !e.live(t, named.SessionID) })
	if res := callSession(t, cs, "session_exec", map[string]any{"session_id": named.SessionID, "argv": []string{"true"}}); !res.IsError {
		t.Fatalf("exec in a closed session: %s", textOf(res))
	}

	// The connection's end destroys its default session.
	if !e.live(t, defaultID) {
		t.Fatalf("default session %s is not on the engine", defaultID)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	waitFor(t, 30*time.Second, "the ended connection's sandbox gone", func() bool { return !e.live(t, defaultID) })
}

// session_snapshot keeps a copy of a session's /work; session_create with
// from_snapshot starts a session from it, which diverges from the original;
// another connection cannot name the snapshot; the connection's end removes
// its snapshot files.
func TestSessionSnapshotToolsDocker(t *testing.T) {
	e := newDockerEnv(t, 4, 8)
	cs := e.httpSession(t, nil)
	mustOK(t, callSession(t, cs, "session_write_file", map[string]any{"path": "state/a.txt", "content": "one\n"}), "write")
	res := callSession(t, cs, "session_snapshot", nil)
	mustOK(t, res, "snapshot")
	sn := structured[SessionSnapshotInfo](t, res)
	if !strings.HasPrefix(sn.SnapshotID, "snap-") || sn.Size <= 0 || sn.Image != sandboxtest.Image() || sn.Dropped != "" {
		t.Fatalf("snapshot: %+v", sn)
	}
	mustOK(t, callSession(t, cs, "session_write_file", map[string]any{"path": "state/a.txt", "content": "two\n"}), "rewrite")

	res = callSession(t, cs, "session_create", map[string]any{"from_snapshot": sn.SnapshotID, "files": map[string]string{"b.txt": "over\n"}})
	mustOK(t, res, "create from the snapshot")
	fork := structured[SessionInfo](t, res)
	res = callSession(t, cs, "session_exec", map[string]any{"session_id": fork.SessionID, "argv": []string{"cat", "state/a.txt", "b.txt"}})
	if out := structured[sandbox.WireResult](t, res); out.Status != "ok" || out.Stdout != "one\nover\n" {
		t.Fatalf("the fork's /work: %+v", out)
	}
	res = callSession(t, cs, "session_exec", map[string]any{"argv": []string{"cat", "state/a.txt"}})
	if out := structured[sandbox.WireResult](t, res); out.Stdout != "two\n" {
		t.Fatalf("the original after the fork: %+v", out)
	}

	other := e.httpSession(t, nil)
	for _, id := range []string{sn.SnapshotID, "snap-00000000000000000000000000000000"} {
		res := callSession(t, other, "session_create", map[string]any{"from_snapshot": id})
		if !res.IsError || !strings.Contains(textOf(res), "not_found") {
			t.Fatalf("another connection's create from %s: %s", id, textOf(res))
		}
	}

	// A connection keeps its newest four: the fifth drops the first.
	var last SessionSnapshotInfo
	for range 4 {
		res := callSession(t, cs, "session_snapshot", map[string]any{"session_id": fork.SessionID})
		mustOK(t, res, "another snapshot")
		last = structured[SessionSnapshotInfo](t, res)
	}
	if last.Dropped != sn.SnapshotID {
		t.Fatalf("fifth snapshot dropped %q, want the first, %s", last.Dropped, sn.SnapshotID)
	}
	if res := callSession(t, cs, "session_close", map[string]any{"session_id": fork.SessionID}); res.IsError {
		t.Fatal(textOf(res))
	}
	if res := callSession(t, cs, "session_create", map[string]any{"from_snapshot": sn.SnapshotID}); !res.IsError || !strings.Contains(textOf(res), "not_found") {
		t.Fatalf("create from a dropped snapshot: %s", textOf(res))
	}

	e.srv.held.mu.Lock()
	dir := e.srv.held.dir
	e.srv.held.mu.Unlock()
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 4 {
		t.Fatalf("snapshot files: %d (%v), want 4", len(entries), err)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	waitFor(t, 30*time.Second, "the ended connection's snapshot files removed", func() bool {
		entries, err := os.ReadDir(dir)
		return err == nil && len(entries) == 0
	})
}

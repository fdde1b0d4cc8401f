package cli

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
)

// TestServeKill9EndsItsSessions is SECURITY.md Q5's crash half: a server
// killed with SIGKILL while it holds a session (with a process detached
// into the background in it) leaves nothing running — the holder sees its
// stdin close and exits, taking every process with it, and the engine
// removes the container — well before the session's TTL, with no restart
// and no reaper involved.
func TestServeKill9EndsItsSessions(t *testing.T) {
	needEngine(t)
	eng := engineAPI(t, "")
	labelEnv, label := uniqueLabel(t)
	// A reaper that would only act in an hour: what goes, goes without it.
	p := startServe(t, []string{labelEnv}, "--reaper-period", "1h")

	ids := make([]string, 0, 2)
	for range 2 {
		st, _, body, err := p.post(t.Context(), api.RouteSessions, api.SessionRequest{TTL: "1h", IdleTimeout: "1h"})
		if err != nil || st != 201 {
			t.Fatalf("create session: %d %s %v", st, body, err)
		}
		var s api.Session
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		path := strings.Replace(api.RouteSessionExec, "{id}", s.ID, 1)
		st, _, body, err = p.post(t.Context(), path, api.SessionExecRequest{
			Argv: []string{"sh", "-c", "setsid sleep 3600 </dev/null >/dev/null 2>&1 & echo started"}})
		if err != nil || st != 200 || !strings.Contains(string(body), "started") {
			t.Fatalf("exec in session: %d %s %v", st, body, err)
		}
	}
	if n := labelled(t, eng, label, "running"); n != 2 {
		t.Fatalf("%d running session containers, want 2", n)
	}
	killed := time.Now()
	if err := p.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)
	eventually(t, 30*time.Second, "the killed server's sessions to be gone", func() bool { return labelled(t, eng, label, "") == 0 })
	t.Logf("sessions %v gone %s after the server was killed (TTL 1h, no reaper ran)", ids, time.Since(killed).Round(time.Millisecond))

	// A new server starts clean and serves sessions again.
	p2 := startServe(t, []string{labelEnv}, "--reaper-period", "1h")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, _, body, err := p2.post(ctx, api.RouteSessions, api.SessionRequest{})
	if err != nil || st != 201 {
		t.Fatalf("create after restart: %d %s %v", st, body, err)
	}
}

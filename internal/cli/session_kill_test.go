package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
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

// TestServeKill9EndsItsMicroVMSessions is Q5's crash half on microvm: a
// server killed with SIGKILL holding two sessions (each with a process
// detached into the background) leaves no QEMU running — each was started
// with a parent-death signal from a thread that never exits, and the guest's
// holder would exit with its port anyway — with no restart and no reaper.
// What it does leave, each VM's record and empty host cgroup, is what the
// reaper finds (List: gone) and removes (Remove) at the session's deadline;
// here it is removed at once. A new server on the same state directory then
// serves sessions.
func TestServeKill9EndsItsMicroVMSessions(t *testing.T) {
	opts := microvmtest.Options(t)
	rt := microvmtest.New(t, opts) // skips (or fails, ASTER_REQUIRE_MICROVM=1) where microvm cannot run; builds the disk
	state := opts.StateDir
	env := []string{"ASTER_MICROVM_STATE_DIR=" + state, "ASTER_MICROVM_CACHE_DIR=" + microvmtest.CacheDir()}
	p := startServe(t, env, "--runtime", "microvm", "--reaper-period", "1h")
	for range 2 {
		st, _, body, err := p.post(t.Context(), api.RouteSessions, api.SessionRequest{TTL: "1h", IdleTimeout: "1h"})
		if err != nil || st != 201 {
			t.Fatalf("create session: %d %s %v", st, body, err)
		}
		var s api.Session
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatal(err)
		}
		path := strings.Replace(api.RouteSessionExec, "{id}", s.ID, 1)
		st, _, body, err = p.post(t.Context(), path, api.SessionExecRequest{
			Argv: []string{"sh", "-c", "setsid sleep 3600 </dev/null >/dev/null 2>&1 & echo started"}})
		if err != nil || st != 200 || !strings.Contains(string(body), "started") {
			t.Fatalf("exec in session: %d %s %v", st, body, err)
		}
	}
	// The QEMU of each session, from the runtime's records.
	type vm struct {
		PID   int    `json:"pid"`
		Start uint64 `json:"start_ticks"`
	}
	var vms []vm
	recs, err := filepath.Glob(filepath.Join(state, "runs", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range recs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v vm
		if err := json.Unmarshal(b, &v); err != nil || v.PID <= 0 {
			t.Fatalf("record %s: %s (%v)", f, b, err)
		}
		vms = append(vms, v)
	}
	alive := func() int {
		n := 0
		for _, v := range vms {
			if processStartTicks(v.PID) == v.Start {
				n++
			}
		}
		return n
	}
	if len(vms) != 2 || alive() != 2 {
		t.Fatalf("%d records, %d QEMU running, want 2 and 2", len(vms), alive())
	}
	killed := time.Now()
	if err := p.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)
	eventually(t, 30*time.Second, "the killed server's VMs to be gone", func() bool { return alive() == 0 })
	t.Logf("both VMs gone %s after the server was killed (TTL 1h, no reaper ran)", time.Since(killed).Round(time.Millisecond))

	// What the reaper does at the deadline.
	list, err := rt.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("the runtime lists %+v, want the two dead sessions", list)
	}
	for _, m := range list {
		if m.State != "gone" {
			t.Fatalf("sandbox %s is %s after the crash, want gone", m.ID, m.State)
		}
		if err := rt.Remove(t.Context(), m.ID); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"/sys/fs/cgroup/aster-microvm/" + m.ID, "/sys/fs/cgroup/memory/aster-microvm/" + m.ID,
			"/sys/fs/cgroup/cpu/aster-microvm/" + m.ID, "/sys/fs/cgroup/pids/aster-microvm/" + m.ID, "/sys/fs/cgroup/freezer/aster-microvm/" + m.ID} {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("host cgroup %s is still there after Remove", d)
			}
		}
	}
	if list, err := rt.List(t.Context()); err != nil || len(list) != 0 {
		t.Fatalf("after Remove the runtime lists %+v (%v)", list, err)
	}

	p2 := startServe(t, env, "--runtime", "microvm", "--reaper-period", "1h")
	st, _, body, err := p2.post(t.Context(), api.RouteSessions, api.SessionRequest{})
	if err != nil || st != 201 {
		t.Fatalf("create after restart: %d %s %v", st, body, err)
	}
	var s api.Session
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	// Deleted, so that the server's end (SIGKILL, in the cleanup) leaves nothing.
	resp, err := p2.http.Do(deleteRequest(t, p2.url+api.RouteSessions+"/"+s.ID))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("delete after restart: %v %v", resp, err)
	}
	resp.Body.Close()
}

func deleteRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// processStartTicks is a process's start time (field 22 of /proc/PID/stat),
// 0 when it is gone or a zombie.
func processStartTicks(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 || f[0] == "Z" {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

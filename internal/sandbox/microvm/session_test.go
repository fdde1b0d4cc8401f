package microvm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestSessions runs the session suite on microvm: each session is one VM
// whose init holds it and serves every call (commands, files, archives,
// terminals) over channels of its port. Under TCG a boot takes seconds, so
// the cases that need a session alive right after its open allow for it.
func TestSessions(t *testing.T) {
	rt := microvmtest.Runtime(t)
	sandboxtest.SessionSuiteWith(t, rt, sandboxtest.SessionSuiteOptions{StartAllowance: bootAllowance(rt)})
}

// TestSessionChannels: the holder, PID 1 of the guest, is out of a job's
// reach; forged frames stay data; stdin past the window; concurrent
// outputs apart (SECURITY.md Q15).
func TestSessionChannels(t *testing.T) {
	sandboxtest.SessionChannelSuite(t, microvmtest.Runtime(t), sandboxtest.SessionChannelOptions{})
}

// TestSessionsAreApart (SECURITY.md Q16): two sessions are two VMs, each
// with a kernel of its own: neither sees the other's files, /tmp or
// processes, a signal to every process one session may signal reaches none
// of the other's, and the file API writes nothing on the host (a session's
// host state is its record alone).
func TestSessionsAreApart(t *testing.T) {
	opts := microvmtest.Options(t)
	rt := microvmtest.New(t, opts)
	m := sandboxtest.SessionManager(t, rt, sandbox.SessionOptions{})
	open := func() *sandbox.Sandbox {
		t.Helper()
		s, err := m.OpenSession(t.Context(), sandbox.SessionSpec{})
		if err != nil {
			t.Fatalf("open session: %v", err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		return s
	}
	sh := func(s *sandbox.Sandbox, script string) string {
		t.Helper()
		res, err := s.Exec(t.Context(), sandbox.ExecSpec{Argv: []string{"sh", "-c", script}})
		if err != nil || res.Status != sandbox.StatusOK {
			t.Fatalf("exec %q: %s %v (%s, stderr %q)", script, res.Status, err, res.Error, res.Stderr.Data)
		}
		return string(res.Stdout.Data)
	}
	a, b := open(), open()
	if err := a.PutFile(t.Context(), "a-only.txt", []byte("a's file through the file API\n")); err != nil {
		t.Fatal(err)
	}
	bootA := sh(a, "echo secret > /tmp/a-only; setsid sleep 4242 >/dev/null 2>&1 < /dev/null & cat /proc/sys/kernel/random/boot_id")
	bootB := sh(b, "cat /proc/sys/kernel/random/boot_id")
	if bootA == "" || bootA == bootB {
		t.Fatalf("boot ids %q and %q: want two kernels", bootA, bootB)
	}
	// B sees nothing of A: no file, no /tmp entry, no process.
	if got := sh(b, "find /work /tmp -mindepth 1 | wc -l; cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c 'sleep 424[2]' || true"); got != "0\n0\n" {
		t.Fatalf("session B sees %q of A's files and processes, want none", got)
	}
	// B signals every process it may: A's sleeper lives on.
	sh(b, "kill -KILL -1 2>/dev/null; true")
	if got := sh(a, "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c 'sleep 424[2]'; cat /tmp/a-only a-only.txt"); got != "1\nsecret\na's file through the file API\n" {
		t.Fatalf("session A after B's kill -1: %q", got)
	}
	// The host holds each session's record and nothing else: no file of
	// either session's /work or /tmp.
	var names []string
	err := filepath.WalkDir(opts.StateDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, opts.StateDir+"/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"runs/" + a.Info().ID + ".json": true, "runs/" + b.Info().ID + ".json": true}
	if len(names) != len(want) {
		t.Fatalf("the state directory holds %v, want the two records only", names)
	}
	for _, n := range names {
		if !want[n] {
			t.Fatalf("the state directory holds %v, want the two records only", names)
		}
	}
}

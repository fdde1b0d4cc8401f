package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/reaper"
)

// SessionManager is a Manager over rt with production limits and the given
// session settings.
func SessionManager(t testing.TB, rt sandbox.Runtime, so sandbox.SessionOptions) *sandbox.Manager {
	t.Helper()
	m, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime:       rt,
		Images:        []string{Image()},
		Defaults:      sandbox.DefaultLimits(),
		Bounds:        sandbox.LimitBounds(),
		MaxConcurrent: 8,
		QueueSize:     16,
		QueueTimeout:  2 * time.Minute,
		Sessions:      so,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// SessionSuiteOptions describe what a runtime's sessions differ in.
type SessionSuiteOptions struct {
	// WholeSandboxOOM: an OOM kill ends the whole sandbox, so the session
	// (gVisor: the host's OOM killer ends the sentry). The exec still gets
	// oom, and the session then ends with "sandbox ended".
	WholeSandboxOOM bool
	// StartAllowance is how much longer than a container's a session of
	// rt may take to open (a microVM booting on QEMU's software CPU): the
	// cases that need a session alive right after its open lengthen their
	// short TTLs and waits by it.
	StartAllowance time.Duration
	// PauseHiddenFromGuestClock: the sandbox's own clock may stop while it
	// is paused (a VM's kernel that counts timer interrupts, which a frozen
	// VM does not get), so the pause case cannot see the freeze in the
	// sandbox's timestamps; the runtime's own test shows it from the host.
	PauseHiddenFromGuestClock bool
}

// SessionSuite runs the session tests against rt, a runtime that holds
// sessions, on the real engine and image.
func SessionSuite(t *testing.T, rt sandbox.Runtime) {
	SessionSuiteWith(t, rt, SessionSuiteOptions{})
}

// SessionSuiteWith is SessionSuite for a runtime that differs as o says.
func SessionSuiteWith(t *testing.T, rt sandbox.Runtime, o SessionSuiteOptions) {
	m := SessionManager(t, rt, sandbox.SessionOptions{})
	open := func(t *testing.T, spec sandbox.SessionSpec) *sandbox.Sandbox {
		t.Helper()
		s, err := m.OpenSession(t.Context(), spec)
		if err != nil {
			t.Fatalf("open session: %v", err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		return s
	}
	exec := func(t *testing.T, s *sandbox.Sandbox, e sandbox.ExecSpec) sandbox.Result {
		t.Helper()
		res, err := s.Exec(t.Context(), e)
		if err != nil {
			t.Fatalf("exec %q: %v", e.Argv, err)
		}
		return res
	}
	sh := func(t *testing.T, s *sandbox.Sandbox, script string) sandbox.Result {
		t.Helper()
		return exec(t, s, sandbox.ExecSpec{Argv: []string{"sh", "-c", script}})
	}
	wantOK := func(t *testing.T, res sandbox.Result, stdout string) {
		t.Helper()
		if res.Status != sandbox.StatusOK || string(res.Stdout.Data) != stdout {
			t.Fatalf("got %s exit=%d stdout=%q stderr=%q error=%q, want ok with %q",
				res.Status, res.ExitCode, res.Stdout.Data, res.Stderr.Data, res.Error, stdout)
		}
	}

	t.Run("FileThenRunAndStatePersists", func(t *testing.T) {
		s := open(t, sandbox.SessionSpec{Files: map[string][]byte{"start.txt": []byte("from create\n")}})
		if err := s.PutFile(t.Context(), "bin/hello.sh", []byte("echo \"hello $1\"\ncat start.txt\n")); err != nil {
			t.Fatal(err)
		}
		wantOK(t, exec(t, s, sandbox.ExecSpec{Argv: []string{"sh", "bin/hello.sh", "world"}}), "hello world\nfrom create\n")
		wantOK(t, sh(t, s, "echo 42 > /tmp/state; cd /work && mkdir -p out && echo made > out/f"), "")
		wantOK(t, sh(t, s, "cat /tmp/state"), "42\n")
		got, err := s.GetFile(t.Context(), "out/f")
		if err != nil || string(got) != "made\n" {
			t.Fatalf("get out/f = %q, %v", got, err)
		}
		// Replacing a file.
		if err := s.PutFile(t.Context(), "/work/out/f", []byte("again")); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetFile(t.Context(), "out/f"); err != nil || string(got) != "again" {
			t.Fatalf("get after put = %q, %v", got, err)
		}
		entries, err := s.List(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name+":"+e.Type)
		}
		if want := []string{"bin:dir", "out:dir", "start.txt:file"}; !slices.Equal(names, want) {
			t.Fatalf("list /work = %v, want %v", names, want)
		}
		if err := s.DeleteFile(t.Context(), "out"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetFile(t.Context(), "out/f"); !errors.Is(err, sandbox.ErrSessionGone) && !strings.Contains(fmt.Sprint(err), "not found") {
			t.Fatalf("get after delete: %v, want not found", err)
		}
	})

	t.Run("ConcurrentExecs", func(t *testing.T) {
		s := open(t, sandbox.SessionSpec{})
		// The first exec waits for a file only the second creates: run one
		// after the other, the first would time out.
		type out struct {
			res sandbox.Result
			err error
		}
		first := make(chan out, 1)
		go func() {
			res, err := s.Exec(context.Background(), sandbox.ExecSpec{Argv: []string{"sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.05; done; echo seen"}, TimeoutMS: 20000})
			first <- out{res, err}
		}()
		wantOK(t, sh(t, s, "sleep 0.3; touch /tmp/go; echo made"), "made\n")
		got := <-first
		if got.err != nil {
			t.Fatal(got.err)
		}
		wantOK(t, got.res, "seen\n")
	})

	t.Run("PerExecStatusesAndTheSessionLivesOn", func(t *testing.T) {
		s := open(t, sandbox.SessionSpec{Limits: sandbox.Limits{MemoryBytes: 96 << 20}})
		res := exec(t, s, sandbox.ExecSpec{Argv: []string{"sleep", "30"}, TimeoutMS: 500})
		if res.Status != sandbox.StatusTimeout {
			t.Fatalf("sleep past its timeout: %s (%s)", res.Status, res.Error)
		}
		res = exec(t, s, sandbox.ExecSpec{Argv: []string{"yes"}, OutputBytes: 1 << 10, OutputCeilingBytes: 64 << 10})
		if res.Status != sandbox.StatusOutputLimit {
			t.Fatalf("yes past the output ceiling: %s (%s)", res.Status, res.Error)
		}
		res = exec(t, s, sandbox.ExecSpec{Argv: []string{"python3", "-c", "chunks = []\nwhile True: chunks.append(bytearray(16 << 20))"}, TimeoutMS: 30000})
		if res.Status != sandbox.StatusOOM || !res.OOMKilled {
			t.Fatalf("memory hog: %s oom=%v (%s)", res.Status, res.OOMKilled, res.Error)
		}
		if o.WholeSandboxOOM {
			select {
			case <-s.Done():
			case <-time.After(time.Minute):
				t.Fatal("the sandbox an OOM kill ended is still held")
			}
			if r := s.EndReason(); r != "sandbox ended" {
				t.Fatalf("end reason %q, want sandbox ended", r)
			}
			if _, err := s.Exec(t.Context(), sandbox.ExecSpec{Argv: []string{"true"}}); !errors.Is(err, sandbox.ErrSessionGone) {
				t.Fatalf("exec after the whole-sandbox OOM: %v, want gone", err)
			}
			return
		}
		// Each later exec gets its own verdict, not the earlier OOM's.
		wantOK(t, sh(t, s, "echo alive"), "alive\n")
		res = sh(t, s, "exit 3")
		if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 3 {
			t.Fatalf("exit 3: %s %d", res.Status, res.ExitCode)
		}
	})

	t.Run("FilePathsAreConfined", func(t *testing.T) {
		s := open(t, sandbox.SessionSpec{})
		for _, p := range []string{"../etc/passwd", "a/../../x", "/etc/passwd", ""} {
			if err := s.PutFile(t.Context(), p, []byte("x")); !errors.Is(err, sandbox.ErrInvalidSpec) {
				t.Errorf("put %q: %v, want invalid_spec", p, err)
			}
		}
		// A link out of /work is not followed by a write.
		wantOK(t, sh(t, s, "ln -s /tmp /work/out"), "")
		if err := s.PutFile(t.Context(), "out/planted", []byte("x")); err == nil {
			t.Fatal("a write through a symlink to /tmp succeeded")
		}
		wantOK(t, sh(t, s, "find /tmp -mindepth 1"), "")
	})

	t.Run("ArchivesInAndOutAndFork", func(t *testing.T) {
		s := open(t, sandbox.SessionSpec{})
		wantOK(t, sh(t, s, "mkdir -p src/pkg && echo one > src/a.txt && echo two > src/pkg/b.txt && ln -s a.txt src/link && echo 7 > /tmp/pid"), "")
		// Out: the directory's tree, made inside the sandbox.
		tb, err := s.GetArchive(t.Context(), "src")
		if err != nil {
			t.Fatal(err)
		}
		got := tarNames(t, tb)
		if want := []string{"./", "./a.txt", "./link", "./pkg/", "./pkg/b.txt"}; !slices.Equal(got, want) {
			t.Fatalf("archive of src: %v, want %v", got, want)
		}
		// In: into another directory, replacing a file of the same name; set-id bits dropped.
		wantOK(t, sh(t, s, "mkdir -p dst && echo old > dst/a.txt"), "")
		if err := s.PutArchive(t.Context(), "dst", bytes.NewReader(tb)); err != nil {
			t.Fatal(err)
		}
		wantOK(t, sh(t, s, "cat dst/a.txt dst/pkg/b.txt dst/link"), "one\ntwo\none\n")
		suid := makeTar(t, tarEntry{name: "tool", mode: 0o4755, body: "#!/bin/sh\n"})
		if err := s.PutArchive(t.Context(), "", bytes.NewReader(suid)); err != nil {
			t.Fatal(err)
		}
		wantOK(t, sh(t, s, "find tool -printf '%m\\n'"), "755\n")
		// Hostile archives are refused before anything is written.
		for name, bad := range map[string][]byte{
			"dotdot":   makeTar(t, tarEntry{name: "../escape", body: "x"}),
			"absolute": makeTar(t, tarEntry{name: "/etc/x", body: "x"}),
			"device":   makeTar(t, tarEntry{name: "null", typ: tar.TypeChar}),
			"linkout":  makeTar(t, tarEntry{name: "out", typ: tar.TypeSymlink, link: "/etc"}, tarEntry{name: "out/x", body: "x"}),
		} {
			if err := s.PutArchive(t.Context(), "", bytes.NewReader(bad)); !errors.Is(err, sandbox.ErrInvalidSpec) {
				t.Errorf("archive %s: %v, want invalid_spec", name, err)
			}
		}
		wantOK(t, sh(t, s, "find /work -mindepth 1 -maxdepth 1 -printf '%f\\n' | sort | tr '\\n' ' '"), "dst src tool ")
		// Fork: a new session from the archive of the whole of /work has its
		// files, none of its processes or /tmp.
		all, err := s.GetArchive(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		fork := open(t, sandbox.SessionSpec{Archive: bytes.NewReader(all)})
		wantOK(t, sh(t, fork, "cat src/pkg/b.txt dst/a.txt; find /tmp -mindepth 1 | wc -l"), "two\none\n0\n")
		wantOK(t, sh(t, fork, "echo changed > src/a.txt"), "")
		wantOK(t, sh(t, s, "cat src/a.txt"), "one\n")
	})

	t.Run("PauseFreezesAndAnyCallResumes", func(t *testing.T) {
		s := open(t, sandbox.SessionSpec{})
		if _, ok := rt.(interface{ Name() string }); !ok {
			t.Skip("no runtime name")
		}
		// A clock in the background: one timestamp every 50 ms.
		wantOK(t, sh(t, s, "setsid sh -c 'while :; do date +%s%N >> /tmp/ticks; sleep 0.05; done' >/dev/null 2>&1 & sleep 0.3; echo started"), "started\n")
		time.Sleep(300 * time.Millisecond)
		if err := s.Pause(t.Context()); err != nil {
			if errors.Is(err, sandbox.ErrPauseUnsupported) {
				t.Skipf("%s cannot pause", rt.Name())
			}
			t.Fatal(err)
		}
		if !s.Paused() || !s.Info().Paused {
			t.Fatal("not marked paused")
		}
		time.Sleep(1500 * time.Millisecond)
		// An exec wakes it.
		res := sh(t, s, "sleep 0.2; cat /tmp/ticks")
		if s.Paused() {
			t.Fatal("still paused after an exec")
		}
		var ticks []int64
		for _, l := range strings.Fields(string(res.Stdout.Data)) {
			var v int64
			fmt.Sscan(l, &v)
			ticks = append(ticks, v)
		}
		var gap int64
		for i := 1; i < len(ticks); i++ {
			gap = max(gap, ticks[i]-ticks[i-1])
		}
		// Frozen for 1.5 s: the clock stopped for at least 1.2 s of it.
		if gap < int64(1200*time.Millisecond) && !o.PauseHiddenFromGuestClock {
			t.Fatalf("longest gap between ticks %s over %d ticks: the sandbox ran while paused (%s %q %q)", time.Duration(gap), len(ticks), res.Status, res.Stdout.Data, res.Stderr.Data)
		}
		// A paused session still ends at its TTL, with nothing left.
		short := open(t, sandbox.SessionSpec{TTL: 2*time.Second + o.StartAllowance})
		if err := short.Pause(t.Context()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-short.Done():
		case <-time.After(30*time.Second + o.StartAllowance):
			t.Fatal("a paused session outlived its TTL")
		}
		if got := short.EndReason(); got != "ttl" {
			t.Fatalf("ended by %q, want ttl", got)
		}
		assertNotListed(t, rt, short.ID())
	})

	t.Run("SessionsAreApart", func(t *testing.T) {
		a, b := open(t, sandbox.SessionSpec{}), open(t, sandbox.SessionSpec{})
		if err := a.PutFile(t.Context(), "a-only.txt", []byte("a's file\n")); err != nil {
			t.Fatal(err)
		}
		// count: how many processes run "sleep 4242", one line a process.
		const count = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <$f; echo; done 2>/dev/null | grep -c '^sleep 4242 $' || true"
		// The sleeper leaves the exec's process group before the exec ends
		// (its name is sleep's once setsid has run), so it outlives the exec.
		wantOK(t, sh(t, a, "echo secret > /tmp/a-only; setsid sleep 4242 >/dev/null 2>&1 </dev/null & "+
			"until [ \"$("+count+")\" = 1 ]; do sleep 0.05; done; echo started"), "started\n")
		// B sees nothing of A: no file in /work, no /tmp entry, no process.
		wantOK(t, sh(t, b, "find /work /tmp -mindepth 1 -name '*a-only*' | wc -l; "+count), "0\n0\n")
		// B signals every process it may: A's sleeper and files live on.
		wantOK(t, sh(t, b, "kill -KILL -1 2>/dev/null; echo sent"), "sent\n")
		wantOK(t, sh(t, a, count+"; cat /tmp/a-only a-only.txt"), "1\nsecret\na's file\n")
	})

	t.Run("CloseDestroysEverything", func(t *testing.T) {
		s := open(t, sandbox.SessionSpec{})
		wantOK(t, sh(t, s, "sleep 300 >/dev/null 2>&1 & echo started"), "started\n")
		id := s.Info().ID
		if err := s.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Exec(t.Context(), sandbox.ExecSpec{Argv: []string{"true"}}); !errors.Is(err, sandbox.ErrSessionGone) {
			t.Fatalf("exec after close: %v, want session gone", err)
		}
		assertNotListed(t, rt, id)
	})

	t.Run("TTLAndIdleEndIt", func(t *testing.T) {
		ttl := open(t, sandbox.SessionSpec{TTL: 2 * time.Second, IdleTimeout: time.Hour})
		idle := open(t, sandbox.SessionSpec{TTL: time.Hour, IdleTimeout: time.Second})
		// Calls keep the TTL session busy; the TTL ends it anyway.
		for i := 0; i < 40; i++ {
			select {
			case <-ttl.Done():
			default:
				time.Sleep(100 * time.Millisecond)
				continue
			}
			break
		}
		for _, c := range []struct {
			s    *sandbox.Sandbox
			want string
		}{{ttl, "ttl"}, {idle, "idle"}} {
			select {
			case <-c.s.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("session %s did not end by its %s", c.s.ID(), c.want)
			}
			if got := c.s.EndReason(); got != c.want {
				t.Errorf("session ended by %q, want %q", got, c.want)
			}
			assertNotListed(t, rt, c.s.ID())
		}
	})

	t.Run("ReaperRemovesAnOrphan", func(t *testing.T) {
		// A held sandbox no Manager tracks (what a crashed server leaves),
		// seen by the reaper past its deadline label: removed, processes and
		// all. Its label is in the future and the reaper's clock an hour
		// ahead, and its listing holds this sandbox only, so that no other
		// reaper on a shared engine takes it first and this one takes
		// nothing else.
		sr := rt.(sandbox.SessionRuntime)
		inst, err := sr.PrepareSession(t.Context(), sandbox.PrepareOptions{
			RunID: sandbox.NewSessionID(), Image: Image(), Limits: sandbox.DefaultLimits(), Deadline: time.Now().Add(10 * time.Minute),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Close(context.Background()) })
		res, err := inst.Exec(t.Context(), sandbox.Job{Argv: []string{"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo up"}, Limits: sandbox.DefaultLimits()})
		if err != nil || string(res.Stdout.Data) != "up\n" {
			t.Fatalf("exec in the orphan: %s %q %v", res.Status, res.Stdout.Data, err)
		}
		o := reaper.ForRuntime(rt)
		o.Grace = 0
		o.Now = func() time.Time { return time.Now().Add(time.Hour) }
		o.List = func(ctx context.Context) ([]sandbox.Managed, error) {
			all, err := rt.List(ctx)
			return slices.DeleteFunc(all, func(m sandbox.Managed) bool { return m.ID != inst.ID() }), err
		}
		actions, err := reaper.New(o).Once(t.Context(), false)
		if err != nil {
			t.Fatal(err)
		}
		removed := false
		for _, a := range actions {
			if a.Sandbox.ID == inst.ID() {
				removed = a.Removed
			}
		}
		if !removed {
			t.Fatalf("the reaper did not remove %s: %+v", inst.ID(), actions)
		}
		select {
		case <-inst.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the reaped sandbox is still running")
		}
		assertNotListed(t, rt, inst.ID())
	})

	t.Run("LimitsAreChecked", func(t *testing.T) {
		if _, err := m.OpenSession(t.Context(), sandbox.SessionSpec{TTL: 1000 * time.Hour}); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Fatalf("ttl above the ceiling: %v", err)
		}
		if _, err := m.OpenSession(t.Context(), sandbox.SessionSpec{Limits: sandbox.Limits{MemoryBytes: 1}}); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Fatalf("memory of 1 byte: %v", err)
		}
	})

	t.Run("TerminalIsDataAndEndsItsProcesses", func(t *testing.T) {
		terminalCase(t, open(t, sandbox.SessionSpec{TTL: 5 * time.Minute}))
	})
}

// assertNotListed fails when the runtime still lists a sandbox of the run id.
func assertNotListed(t *testing.T, rt sandbox.Runtime, runID string) {
	t.Helper()
	list, err := rt.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		if m.RunID == runID || m.ID == runID {
			t.Fatalf("sandbox %s of session %s still exists (%s)", m.ID, runID, m.State)
		}
	}
}

// BenchSessionExec measures, side by side on rt, the round trip of `true`
// as an exec in a live session and as a cold one-shot run, and reports the
// mean and the median of each as ms/op metrics (session-exec-ms,
// session-exec-p50-ms, oneshot-ms, oneshot-p50-ms).
func BenchSessionExec(b *testing.B, rt sandbox.Runtime) {
	m := SessionManager(b, rt, sandbox.SessionOptions{})
	s, err := m.OpenSession(context.Background(), sandbox.SessionSpec{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	var execT, oneT []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := s.Exec(context.Background(), sandbox.ExecSpec{Argv: []string{"true"}})
		execT = append(execT, time.Since(t0))
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("exec: %s %v", res.Status, err)
		}
		t1 := time.Now()
		res, err = m.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}})
		oneT = append(oneT, time.Since(t1))
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("run: %s %v", res.Status, err)
		}
	}
	b.ReportMetric(meanMS(execT), "session-exec-ms")
	b.ReportMetric(medianMS(execT), "session-exec-p50-ms")
	b.ReportMetric(meanMS(oneT), "oneshot-ms")
	b.ReportMetric(medianMS(oneT), "oneshot-p50-ms")
}

func meanMS(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum.Microseconds()) / 1000 / float64(max(len(ds), 1))
}

func medianMS(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name, body, link string
	mode             int64
	typ              byte
}

func makeTar(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: e.typ, Linkname: e.link}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tarNames lists an archive's entry names, sorted.
func tarNames(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read archive: %v", err)
		}
		names = append(names, h.Name)
	}
	slices.Sort(names)
	return names
}

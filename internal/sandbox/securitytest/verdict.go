package securitytest

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// SECURITY.md section K: the job is hostile to aster-init and to the verdict,
// and section M2: no two sandboxes share a kernel user.

// pastOOM runs spec, whose job prints "before", reads a line of stdin and
// then runs out of memory, letting its first line reach the host first
// (heardFirst) where the OOM kill takes aster-init with it: on a target whose
// sandbox dies whole (Target.WholeSandboxOOM), or always with initDies.
func (s *suite) pastOOM(t *testing.T, spec sandbox.Spec, initDies bool) sandbox.Result {
	t.Helper()
	if initDies || s.tgt.WholeSandboxOOM {
		spec = heardFirst(t, spec)
	}
	return s.run(t, spec)
}

// wantOOMWithOutput checks a run that must end oom and keep what it printed
// before the kill.
func wantOOMWithOutput(t *testing.T, res sandbox.Result) {
	t.Helper()
	wantStatus(t, res, sandbox.StatusOOM)
	if !res.OOMKilled {
		t.Errorf("status oom but OOMKilled false: %s", short(res))
	}
	if !strings.HasPrefix(string(res.Stdout.Data), "before\n") {
		t.Errorf("the output written before the kill is lost: %s", short(res))
	}
}

// K1: many small processes over the memory limit (make -j, pytest-xdist).
// They must be alive together: each holds its memory for a second (longer
// where the target's CPU is emulated and forks are slow).
func (s *suite) k1ManyProcesses(t *testing.T) {
	res := s.pastOOM(t, sandbox.Spec{Argv: []string{"python3", "-c", `
import os, sys, time
print("before", flush=True)
sys.stdin.readline()
kids = []
# Each child keeps its pages until every child exists (EOF on the pipe once
# the parent closes it), so they overlap however loaded the machine is.
r, w = os.pipe()
for i in range(30):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        b = bytearray(3 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        os.read(r, 1)
        os._exit(0)
    kids.append(pid)
os.close(w)
for p in kids:
    os.waitpid(p, 0)
`}, Limits: sandbox.Limits{MemoryBytes: 64 << 20, Pids: 64, TimeoutMS: s.slow(60_000)}}, false)
	wantOOMWithOutput(t, res)
}

// K1: tmpfs pages belong to no process: /tmp filled past the memory limit.
func (s *suite) k1Tmpfs(t *testing.T) {
	res := s.pastOOM(t, sandbox.Spec{Argv: []string{"sh", "-c", "echo before; read _; dd if=/dev/zero of=/tmp/fill bs=1M count=400 2>/dev/null; echo after"},
		Limits: sandbox.Limits{MemoryBytes: 64 << 20, TmpBytes: 512 << 20, TimeoutMS: 60_000}}, false)
	wantOOMWithOutput(t, res)
}

// K1: /dev/shm pages, the same way.
func (s *suite) k1Shm(t *testing.T) {
	res := s.pastOOM(t, sandbox.Spec{Argv: []string{"sh", "-c", "echo before; read _; dd if=/dev/zero of=/dev/shm/fill bs=1M count=15 2>/dev/null; echo after"},
		Limits: sandbox.Limits{MemoryBytes: 16 << 20, TimeoutMS: 60_000}}, false)
	wantOOMWithOutput(t, res)
}

// K1: the job lowers its own OOM score back to init's, so that under tmpfs
// pressure init (then the largest process) is the OOM killer's choice. Init
// dies without a result; the host still learns the OOM, from a source the job
// cannot touch, and keeps the output that had reached it.
func (s *suite) k1InitVictim(t *testing.T) {
	res := s.pastOOM(t, sandbox.Spec{Argv: []string{"sh", "-c", "echo 0 > /proc/self/oom_score_adj; echo before; read _; exec dd if=/dev/zero of=/tmp/fill bs=1M count=400"},
		Limits: sandbox.Limits{MemoryBytes: 64 << 20, TmpBytes: 512 << 20, TimeoutMS: 60_000}}, true)
	wantOOMWithOutput(t, res)
}

// signalProbe sends every signal 1–64 to PID 1, reports what the kernel said,
// tries to lower init's resource limits, then fails on purpose with exit 3.
const signalProbe = `
import os, errno, resource, ctypes
sent, refused = [], []
for sig in range(1, 65):
    try:
        os.kill(1, sig)
        sent.append(sig)
    except PermissionError:
        refused.append(sig)
    except OSError as e:
        print("error", sig, e)
print("sent=" + ",".join(map(str, sent)))
print("refused=" + ",".join(map(str, refused)))
try:
    resource.prlimit(1, resource.RLIMIT_NOFILE, (1, 1))
    print("prlimit=allowed")
except PermissionError:
    print("prlimit=refused")
print("done", flush=True)
raise SystemExit(3)
`

// K2: no signal the job sends to PID 1 ends init or changes the verdict.
func (s *suite) k2Signals(t *testing.T) {
	res := s.py(t, signalProbe, sandbox.Limits{TimeoutMS: 30_000})
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 3 {
		t.Fatalf("the verdict is not the job's (exit 3): %s", short(res))
	}
	if !strings.Contains(string(res.Stdout.Data), "done\n") {
		t.Fatalf("the probe did not finish: %s", short(res))
	}
	for _, bad := range []string{"goroutine ", "runtime.", "SIGQUIT", "panic"} {
		if strings.Contains(res.Error, bad) || strings.Contains(string(res.Stderr.Data), bad) {
			t.Fatalf("a stack dump reached the caller: %s", short(res))
		}
	}
}

// K2: the job cannot reach init at all: every signal and prlimit are refused
// by the kernel (init runs under another uid).
func (s *suite) k2Unreachable(t *testing.T) {
	res := s.py(t, signalProbe, sandbox.Limits{TimeoutMS: 30_000})
	got := kv(res)
	if got["sent"] != "" || len(strings.Split(got["refused"], ",")) != 64 {
		t.Fatalf("the job reached init: sent %q refused %q (%s)", got["sent"], got["refused"], short(res))
	}
	if got["prlimit"] != "refused" {
		t.Fatalf("the job could change init's resource limits: %s", short(res))
	}
	wantStatus(t, res, sandbox.StatusExitNonzero)
}

// K7: the job starts clean: the highest OOM score from its first instruction
// (so the OOM killer takes it before init), no signal ignored or blocked
// (init ignores nearly all of them, and an ignored signal stays ignored across
// fork and exec), and init's own score below the job's while the job runs.
// The first job is cat itself, the first program executed, reading its own
// status.
func (s *suite) k7JobStartsClean(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: []string{"cat", "/proc/self/status", "/proc/self/oom_score_adj"}})
	wantStatus(t, res, sandbox.StatusOK)
	lines := strings.Split(strings.TrimSpace(string(res.Stdout.Data)), "\n")
	if len(lines) < 3 {
		t.Fatalf("no status: %s", short(res))
	}
	status := map[string]string{}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, ":"); ok {
			status[k] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"SigIgn", "SigBlk"} {
		if _, ok := status[k]; !ok && status["Name"] == "cat" && status["Seccomp"] != "" {
			// gVisor's /proc/PID/status has neither line: nothing to read.
			t.Logf("this kernel's /proc/self/status has no %s", k)
			continue
		}
		if status[k] != "0000000000000000" {
			t.Errorf("%s=%q at the job's start, want no signal", k, status[k])
		}
	}
	if job := lines[len(lines)-1]; job != "1000" {
		t.Errorf("the job's oom_score_adj is %q, want 1000", job)
	}
	// Init may share the job's score for the microseconds of the fork (see
	// aster-init's directStart); a moment later it has its own back.
	res = s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", "sleep 0.2; cat /proc/1/oom_score_adj"}})
	wantStatus(t, res, sandbox.StatusOK)
	if n, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout.Data))); err != nil || n >= 1000 {
		t.Errorf("init's oom_score_adj is %q while the job runs, want below the job's", res.Stdout.Data)
	}
}

// K3: files the verdict could be computed from are not writable; a forged
// memory.events changes nothing, and a real OOM cannot be hidden.
func (s *suite) k3Forged(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", `
for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.oom_control; do
  printf 'oom_kill 7\n' > "$f" 2>/dev/null && echo "wrote $f"
done
# A masked file is /dev/null bound over it: writable, and it keeps nothing.
# (find's -type trusts the directory entry, which still says "file".)
find /sys -writable 2>/dev/null | while read -r f; do [ -c "$f" ] || echo "writable $f"; done | head -5
exit 1`}, Limits: sandbox.Limits{TimeoutMS: 60_000}})
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 1 || res.OOMKilled {
		t.Fatalf("a forged OOM count changed the verdict: %s", short(res))
	}
	if len(res.Stdout.Data) != 0 {
		t.Fatalf("the job can write under /sys:\n%s", res.Stdout.Data)
	}
	hidden := s.pastOOM(t, sandbox.Spec{Argv: []string{"python3", "-c", `
import sys
for f in ["/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"]:
    try:
        open(f, "w").write("oom_kill 0\n")
    except OSError:
        pass
print("before", flush=True)
sys.stdin.readline()
b = bytearray(512 << 20)
`}, Limits: sandbox.Limits{MemoryBytes: 64 << 20, TimeoutMS: 60_000}}, false)
	wantOOMWithOutput(t, hidden)
}

// K4: output that looks like protocol frames, an early-closed stdout and odd
// exit codes come back as plain data with the right status.
func (s *suite) k4Lookalikes(t *testing.T) {
	fake := fakeResultFrame()
	res := s.run(t, sandbox.Spec{
		Argv:   []string{"sh", "-c", "cat; exec 1>&- 2>&-; sleep 0.3; exit 7"},
		Stdin:  bytes.NewReader(fake),
		Limits: sandbox.Limits{TimeoutMS: 30_000},
	})
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 7 {
		t.Fatalf("frames in the output changed the verdict: %s", short(res))
	}
	if !bytes.Equal(res.Stdout.Data, fake) {
		t.Fatalf("stdout %q, want the bytes the job wrote, %q", res.Stdout.Data, fake)
	}
	for code, want := range map[int]sandbox.Status{255: sandbox.StatusExitNonzero, 137: sandbox.StatusExitNonzero, 0: sandbox.StatusOK} {
		res := s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", "exit " + strconv.Itoa(code)}})
		if res.Status != want || res.ExitCode != code || res.OOMKilled {
			t.Errorf("exit %d: %s, want %s", code, short(res), want)
		}
	}
}

// fakeResultFrame is a well-formed result frame saying "exit 0, all fine".
func fakeResultFrame() []byte {
	payload := []byte(`{"exit_code":0,"signal":0,"oom_kills":0}`)
	var b bytes.Buffer
	b.WriteByte('R')
	_ = binary.Write(&b, binary.BigEndian, uint32(len(payload)))
	b.Write(payload)
	return b.Bytes()
}

// K5: a job that never reads its stdin while the caller goes away ends
// within seconds, and nothing of it remains.
func (s *suite) k5CallerGone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	id := sandbox.NewRunID()
	started := make(chan struct{})
	var once sync.Once
	done := make(chan sandbox.Result, 1)
	go func() {
		res, _ := s.mgr.Run(ctx, sandbox.Spec{
			ID: id, Image: s.tgt.Image,
			Argv:  []string{"sh", "-c", "echo started; exec sleep 600"},
			Stdin: io.LimitReader(zeros{}, 64<<20),
			OnOutput: func(sandbox.Stream, []byte) {
				once.Do(func() { close(started) })
			},
			Limits: sandbox.Limits{TimeoutMS: 300_000},
		})
		done <- res
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the job did not start")
	}
	cancel()
	select {
	case res := <-done:
		if res.Status != sandbox.StatusKilled {
			t.Errorf("status %s, want killed: %s", res.Status, short(res))
		}
	case <-time.After(15 * time.Second):
		// Say how late it was and where the time went (the Manager's and the
		// runtime's timings), so that a slow run can be told from a stuck one.
		select {
		case res := <-done:
			t.Fatalf("the run did not end within 15s of the caller going away: it ended later, %s: %s (timings %v)", res.Status, short(res), res.Timings)
		case <-time.After(time.Minute):
			t.Fatal("the run did not end within 75s of the caller going away")
		}
	}
	s.assertGone(t, id)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// M2: two sandboxes never share a kernel user, with each other or with a host
// account: one holding every inotify instance and its whole POSIX message
// queue quota leaves a second one unaffected.
func (s *suite) m2Quotas(t *testing.T) {
	release := make(chan struct{})
	full := make(chan struct{})
	var once sync.Once
	type outcome struct {
		res sandbox.Result
		err error
	}
	first := make(chan outcome, 1)
	go func() {
		res, err := s.mgr.Run(t.Context(), sandbox.Spec{
			Image: s.tgt.Image,
			Argv: []string{"python3", "-c", `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
# librt first: where inotify has no per-user quota (gVisor), the loop ends at
# the descriptor limit, and nothing could be opened after it.
rt = ctypes.CDLL("librt.so.1", use_errno=True)
n = 0
while n < 100000:
    if libc.inotify_init1(0) < 0:
        break
    n += 1
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
rt.mq_open.restype = ctypes.c_int
q = 0
while q < 256:
    a = Attr(0, 10, 8192, 0)
    if rt.mq_open(("/q%d" % q).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a)) < 0:
        break
    q += 1
print("uid=%d inotify=%d mqueues=%d" % (os.getuid(), n, q), flush=True)
sys.stdin.read()
`},
			Stdin: readerUntil(release),
			OnOutput: func(_ sandbox.Stream, p []byte) {
				if bytes.Contains(p, []byte("mqueues=")) {
					once.Do(func() { close(full) })
				}
			},
			Limits: sandbox.Limits{TimeoutMS: 120_000},
		})
		first <- outcome{res, err}
	}()
	select {
	case <-full:
	case o := <-first:
		t.Fatalf("the first sandbox ended early: %v %s", o.err, short(o.res))
	case <-time.After(90 * time.Second):
		close(release)
		t.Fatal("the first sandbox did not exhaust its quotas in time")
	}
	second := s.py(t, `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
a = Attr(0, 10, 8192, 0)
q = rt.mq_open(b"/second", os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a))
print("uid=%d inotify=%d mqueue=%d" % (os.getuid(), fd, q))
`, sandbox.Limits{TimeoutMS: 30_000})
	close(release)
	o := <-first
	if o.err != nil {
		t.Fatalf("first sandbox: %v", o.err)
	}
	a, b := kvLine(string(o.res.Stdout.Data)), kvLine(string(second.Stdout.Data))
	if a["uid"] == "" || a["uid"] == b["uid"] {
		t.Fatalf("two sandboxes share uid %q", a["uid"])
	}
	if n, _ := strconv.Atoi(a["inotify"]); n < 1 || n >= 100000 {
		t.Fatalf("the first sandbox did not exhaust its inotify instances (%q): the probe proves nothing", a["inotify"])
	}
	if n, _ := strconv.Atoi(b["inotify"]); n < 0 {
		t.Errorf("a second sandbox cannot create an inotify instance while the first holds its quota: %s", short(second))
	}
	if n, _ := strconv.Atoi(b["mqueue"]); n < 0 {
		t.Errorf("a second sandbox cannot open a message queue while the first holds its quota: %s", short(second))
	}
	for _, u := range []string{a["uid"], b["uid"]} {
		if n, err := strconv.Atoi(u); err != nil || hostAccount(n) {
			t.Errorf("sandbox uid %s is a host account's", u)
		}
	}
}

// kvLine parses "k=v k=v" words.
func kvLine(s string) map[string]string {
	out := map[string]string{}
	for _, w := range strings.Fields(s) {
		if k, v, ok := strings.Cut(w, "="); ok {
			out[k] = v
		}
	}
	return out
}

// readerUntil blocks until ch is closed, then reads EOF.
func readerUntil(ch <-chan struct{}) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		<-ch
		pw.Close()
	}()
	return pr
}

// hostAccount says whether uid names an account in the host's passwd file.
func hostAccount(uid int) bool {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, ":"); len(f) > 2 && f[2] == strconv.Itoa(uid) {
			return true
		}
	}
	return false
}

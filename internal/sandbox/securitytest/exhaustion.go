package securitytest

import (
	"bytes"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// B1: a fork bomb hits the pids limit; the job is reported; a job running
// beside it is unaffected.
func (s *suite) b1ForkBombShell(t *testing.T) {
	side := make(chan outcome, 1)
	go func() {
		select { // let the bomb get going
		case <-time.After(500 * time.Millisecond):
		case <-t.Context().Done():
		}
		side <- s.tryRun(t.Context(), sandbox.Spec{Argv: []string{"sh", "-c", "echo beside"}})
	}()
	res := s.run(t, sandbox.Spec{
		Argv:   []string{"sh", "-c", "f(){ f | f & }; f; sleep 3; echo survived"},
		Limits: sandbox.Limits{TimeoutMS: s.slow(8000), Pids: 64}, // under emulation (microvm on TCG) 64 shells take seconds
	})
	beside := s.must(t, <-side)
	if !strings.Contains(string(res.Stderr.Data), "fork") {
		t.Fatalf("no fork failure reported by the shell: %s", short(res))
	}
	if res.Status == sandbox.StatusError {
		t.Fatalf("fork bomb broke the sandbox: %s", short(res))
	}
	if beside.Status != sandbox.StatusOK || string(beside.Stdout.Data) != "beside\n" {
		t.Fatalf("job beside the fork bomb was affected: %s", short(beside))
	}
	s.assertGone(t, res.ID)
}

// ForkBomb is a Python program that forks until a fork fails, each child
// sleeping a minute, and prints how many it forked ("forked=N") and the
// failure's errno name ("error=EAGAIN"): SECURITY.md B1.
const ForkBomb = `
import os, time, errno
n = 0
err = ""
while True:
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print("forked=%d" % n)
print("error=%s" % err)
`

func (s *suite) b1ForkBombPython(t *testing.T) {
	const pids = 64
	res := s.py(t, ForkBomb, sandbox.Limits{TimeoutMS: 20000, Pids: pids})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	n, _ := strconv.Atoi(got["forked"])
	if got["error"] != "EAGAIN" || n <= 0 || n >= pids {
		t.Fatalf("forks should fail with EAGAIN below the pids limit %d: %v", pids, got)
	}
	if res.Duration > 15*time.Second {
		t.Fatalf("sleeping children kept the job alive: %s", short(res))
	}
	s.assertGone(t, res.ID)
}

// B2: allocating far past the memory limit is an OOM kill, reported as such.
func (s *suite) b2Memory(t *testing.T) {
	res := s.memoryHog(t)
	wantStatus(t, res, sandbox.StatusOOM)
	if !res.OOMKilled || res.Signal != "SIGKILL" {
		t.Fatalf("oom not reported with its signal: %s oom=%v", short(res), res.OOMKilled)
	}
}

// memoryHog runs a program that prints "before", reads a line of stdin and
// then allocates far past a 96 MiB memory limit, with a small job beside it
// that must be unaffected; it returns the hog's result (B2 and its adapted
// form), run through pastOOM.
func (s *suite) memoryHog(t *testing.T) sandbox.Result {
	t.Helper()
	side := make(chan outcome, 1)
	go func() {
		side <- s.tryRun(t.Context(), sandbox.Spec{Argv: []string{"python3", "-c", "print(sum(range(1000)))"}})
	}()
	res := s.pastOOM(t, sandbox.Spec{Argv: []string{"python3", "-c", `
import sys
print("before", flush=True)
sys.stdin.readline()
chunks = []
while True:
    chunks.append(bytearray(16 << 20))
`}, Limits: sandbox.Limits{MemoryBytes: 96 << 20, TimeoutMS: 30000}}, false)
	beside := s.must(t, <-side)
	if beside.Status != sandbox.StatusOK || string(beside.Stdout.Data) != "499500\n" {
		t.Fatalf("job beside the memory hog was affected: %s", short(beside))
	}
	return res
}

// B3: thousands of threads are capped by the pids limit.
func (s *suite) b3Threads(t *testing.T) {
	res := s.py(t, `
import threading, time
n = 0
err = ""
ev = threading.Event()
try:
    for i in range(5000):
        threading.Thread(target=ev.wait, daemon=True).start()
        n += 1
except RuntimeError as e:
    err = str(e)
print("threads=%d" % n)
print("error=%s" % err)
ev.set()
`, sandbox.Limits{Pids: 128, TimeoutMS: 20000})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	n, _ := strconv.Atoi(got["threads"])
	if n >= 128 || !strings.Contains(got["error"], "can't start new thread") {
		t.Fatalf("threads were not capped by the pids limit: %v", got)
	}
	// The cap is the limit, not a sandbox where threads cannot start at all
	// (under gVisor a seccomp errno it cannot express once made every
	// pthread_create fail, and this case still passed).
	if n < 16 {
		t.Fatalf("only %d threads started under a limit of 128: %v", n, got)
	}
}

// B4: filling /work or /tmp is ENOSPC inside; the host disk is untouched.
// What the test owns is measured, never the host's free space (which every
// other process changes): inside, each mount is a tmpfs no larger than its
// limit and the fill landed in it; outside, the sandbox's own host storage
// stays empty while its tmpfs is full.
func (s *suite) b4Fill(t *testing.T) {
	l := sandbox.Limits{WorkdirBytes: 64 << 20, TmpBytes: 32 << 20, MemoryBytes: 512 << 20}
	res, fp := s.runHeld(t, sandbox.Spec{Argv: []string{"python3", "-c", mountProbe + `
for d in ("/work", "/tmp"):
    total = fsinfo(d)[1]
    try:
        with open(d + "/fill", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))
                f.flush()
    except OSError as e:
        print("%s=%s" % (d, errno.errorcode.get(e.errno)))
    fstype, _, used, _, _ = fsinfo(d)
    print("%s_type=%s" % (d, fstype))
    print("%s_total=%d" % (d, total))
    print("%s_used=%d" % (d, used))
    print("%s_size=%d" % (d, os.stat(d + "/fill").st_size))
` + holdUntilStdinCloses}, Limits: l})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	if got["/work"] != "ENOSPC" || got["/tmp"] != "ENOSPC" {
		t.Fatalf("filling tmpfs should fail with ENOSPC: %v (%s)", got, short(res))
	}
	for d, limit := range map[string]int64{"/work": l.WorkdirBytes, "/tmp": l.TmpBytes} {
		total, used, size := num(got, d+"_total"), num(got, d+"_used"), num(got, d+"_size")
		if got[d+"_type"] != "tmpfs" {
			t.Errorf("%s is %q, not a tmpfs: the fill may reach the host disk", d, got[d+"_type"])
		}
		if total <= 0 || total > limit {
			t.Errorf("%s holds %d bytes, limit %d", d, total, limit)
		}
		// The fill stopped at the end of that tmpfs, and the tmpfs counts it.
		if size < total-(2<<20) || size > total || used+4096 < size {
			t.Errorf("%s: wrote %d bytes before ENOSPC into %d (used %d)", d, size, total, used)
		}
	}
	s.assertSmallFootprint(t, fp, "while its /work and /tmp were full")
}

// mountProbe defines fsinfo(path) for the programs of B4 and B6: the type of
// the filesystem mounted at path (from /proc/self/mountinfo, the topmost
// mount) and its size, used bytes, inodes and used inodes (statvfs).
const mountProbe = `
import errno, os, sys
def fsinfo(path):
    fstype = ""
    for line in open("/proc/self/mountinfo"):
        pre, _, post = line.partition(" - ")
        if pre.split()[4] == path:
            fstype = post.split()[0]
    st = os.statvfs(path)
    return (fstype, st.f_blocks * st.f_frsize, (st.f_blocks - st.f_bfree) * st.f_frsize,
            st.f_files, st.f_files - st.f_ffree)
`

// fallocateTmp, after mountProbe, asks for 10 GB in /tmp at once and prints
// the answer (fallocate=ok or fallocate=ERRNO) and /tmp's type, size and
// used bytes (tmp_type, tmp_total, tmp_used), for B6.
const fallocateTmp = `
fd = os.open("/tmp/big", os.O_CREAT | os.O_WRONLY, 0o644)
try:
    os.posix_fallocate(fd, 0, 10 << 30)
    print("fallocate=ok")
except OSError as e:
    print("fallocate=%s" % errno.errorcode.get(e.errno))
fstype, total, used, _, _ = fsinfo("/tmp")
print("tmp_type=%s" % fstype)
print("tmp_total=%d" % total)
print("tmp_used=%d" % used)
`

// holdUntilStdinCloses ends a program of runHeld: it says it is done, then
// keeps the sandbox alive until the host has measured it.
const holdUntilStdinCloses = `
print("held", flush=True)
sys.stdin.read()
`

// runHeld runs a program that ends with holdUntilStdinCloses. Once the
// program says it is done, and while its sandbox is still alive, the host
// measures the sandbox's footprint (nil when the target cannot); then stdin
// closes and the program exits.
func (s *suite) runHeld(t *testing.T, spec sandbox.Spec) (sandbox.Result, *Footprint) {
	t.Helper()
	spec.ID = sandbox.NewRunID()
	stdin, release := io.Pipe()
	defer release.Close()
	spec.Stdin = stdin
	held := make(chan struct{})
	var once sync.Once
	var tail []byte // OnOutput is called from one goroutine at a time
	spec.OnOutput = func(stream sandbox.Stream, data []byte) {
		if stream != sandbox.Stdout {
			return
		}
		tail = append(tail, data...)
		if bytes.Contains(tail, []byte("held\n")) {
			once.Do(func() { close(held) })
		}
		tail = tail[max(0, len(tail)-8):]
	}
	if s.tgt.Footprint == nil {
		release.Close() // nothing to measure: let the program end at once
	}
	done := make(chan outcome, 1)
	go func() { done <- s.tryRun(t.Context(), spec) }()

	var fp *Footprint
	select {
	case <-held:
		if s.tgt.Footprint != nil {
			fp = s.measure(t, spec.ID)
		}
	case o := <-done:
		return s.must(t, o), nil // ended before it was done; its status says why
	}
	release.Close()
	return s.must(t, <-done), fp
}

// measure returns the footprint of the one live sandbox of a run. It reports
// failures with t.Error, so the run it waits on is still ended and collected.
func (s *suite) measure(t *testing.T, runID string) *Footprint {
	t.Helper()
	ids, err := s.tgt.Live(t.Context(), runID)
	if err != nil || len(ids) != 1 {
		t.Errorf("the sandbox of run %s while it runs: %v %v", runID, ids, err)
		return nil
	}
	fp, err := s.tgt.Footprint(t.Context(), ids[0])
	if err != nil {
		t.Errorf("footprint of %s: %v", ids[0], err)
		return nil
	}
	return &fp
}

// footprintBytes and footprintFiles bound what a sandbox may hold on the host
// disk at any time: a few small files (a bundle, a state record, mount
// points), however much the job writes.
const (
	footprintBytes = 1 << 20
	footprintFiles = 1000
)

func (s *suite) assertSmallFootprint(t *testing.T, fp *Footprint, when string) {
	t.Helper()
	if s.tgt.Footprint == nil {
		t.Logf("host storage of the sandbox not measurable on %s; the in-sandbox checks stand", s.tgt.Runtime.Name())
		return
	}
	if fp == nil {
		return // measure has failed the test already
	}
	if fp.Bytes > footprintBytes || fp.Files > footprintFiles {
		t.Errorf("the sandbox held %d bytes in %d files on the host %s (at most %d bytes, %d files)", fp.Bytes, fp.Files, when, footprintBytes, footprintFiles)
	}
	t.Logf("host footprint %s: %d bytes, %d files", when, fp.Bytes, fp.Files)
}

// num reads an integer value of kv; a missing or malformed one is -1.
func num(kv map[string]string, key string) int64 {
	n, err := strconv.ParseInt(kv[key], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// rootWrites is the program of B5: it tries to open each of paths for
// appending (creating it), printing PATH=written or PATH=ERRNO, then to make
// a directory below /usr (mkdir=made or mkdir=ERRNO).
func rootWrites(paths ...string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = strconv.Quote(p)
	}
	return `
import errno, os
for p in (` + strings.Join(q, ", ") + `):
    try:
        open(p, "a").close()
        print("%s=written" % p)
    except OSError as e:
        print("%s=%s" % (p, errno.errorcode.get(e.errno)))
try:
    os.mkdir("/usr/newdir")
    print("mkdir=made")
except OSError as e:
    print("mkdir=%s" % errno.errorcode.get(e.errno))
`
}

// B5: the root filesystem is read-only.
func (s *suite) b5ReadOnly(t *testing.T) {
	res := s.py(t, rootWrites("/x", "/usr/x", "/etc/x", "/bin/x", "/var/x"), sandbox.Limits{})
	wantStatus(t, res, sandbox.StatusOK)
	for k, v := range kv(res) {
		if v != "EROFS" {
			t.Errorf("%s: %s, want EROFS", k, v)
		}
	}
	if len(kv(res)) != 6 {
		t.Fatalf("probe incomplete: %s", short(res))
	}
	// Existing files are refused too (EACCES comes first for root-owned ones),
	// and the root mount itself is read-only.
	mounts := s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", "awk '$2 == \"/\" {print $4}' /proc/mounts | cut -d, -f1; echo x >> /etc/passwd 2>/dev/null && echo appended || echo refused"}})
	if string(mounts.Stdout.Data) != "ro\nrefused\n" {
		t.Fatalf("root filesystem: %s", short(mounts))
	}
}

// B6: a million tiny files and a 10 GB fallocate fail inside the quota: the
// files stop at /work's own inode cap, the fallocate at /tmp's size, and the
// sandbox's host storage stays empty meanwhile (no host-wide free-space or
// free-inode comparison: other work on the machine moves those).
func (s *suite) b6Files(t *testing.T) {
	l := sandbox.DefaultLimits()
	l.TimeoutMS = 120000
	res, fp := s.runHeld(t, sandbox.Spec{Argv: []string{"python3", "-c", mountProbe + `
n = 0
err = ""
try:
    for i in range(1000000):
        os.close(os.open("/work/f%d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
        n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno)
print("files=%d" % n)
print("files_error=%s" % err)
fstype, _, _, inodes, used = fsinfo("/work")
print("work_type=%s" % fstype)
print("work_inodes=%d" % inodes)
print("work_inodes_used=%d" % used)
` + fallocateTmp + holdUntilStdinCloses}, Limits: l})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	n, inodes, used := num(got, "files"), num(got, "work_inodes"), num(got, "work_inodes_used")
	if got["files_error"] != "ENOSPC" || n >= 1000000 {
		t.Fatalf("a million files should fail with ENOSPC inside the quota: %v", got)
	}
	if got["fallocate"] != "ENOSPC" {
		t.Fatalf("10 GB fallocate should fail with ENOSPC: %v", got)
	}
	if got["work_type"] != "tmpfs" || got["tmp_type"] != "tmpfs" {
		t.Errorf("/work is %q and /tmp %q; both must be tmpfs", got["work_type"], got["tmp_type"])
	}
	// The files ran into /work's own inode cap, and /work counts every one.
	if inodes <= 0 || inodes > sandbox.TmpfsInodes(l.WorkdirBytes) || used < n || n < inodes-100 {
		t.Errorf("files=%d stopped at /work's %d inodes (%d used; cap %d)", n, inodes, used, sandbox.TmpfsInodes(l.WorkdirBytes))
	}
	if total := num(got, "tmp_total"); total <= 0 || total > l.TmpBytes || num(got, "tmp_used") > total {
		t.Errorf("/tmp holds %s of %d bytes, limit %d", got["tmp_used"], total, l.TmpBytes)
	}
	s.assertSmallFootprint(t, fp, "while its /work held its files")
}

// B7: a busy loop is killed at the wall deadline and throttled to its quota.
func (s *suite) b7BusyLoop(t *testing.T) {
	start := time.Now()
	res := s.run(t, sandbox.Spec{
		Argv:   []string{"python3", "-c", "while True: pass"},
		Limits: sandbox.Limits{TimeoutMS: 3000, MilliCPUs: 250},
	})
	life := time.Since(start)
	wantStatus(t, res, sandbox.StatusTimeout)
	if res.Duration > 6*time.Second {
		t.Fatalf("killed too late: %s", short(res))
	}
	// A quarter of a CPU for ~3 s is ~750 ms of CPU. The CPU time is the
	// sandbox cgroup's, which on gVisor also holds the sentry's start and
	// teardown: the quota bounds it by a quarter of the sandbox's whole life,
	// which the run's wall time from the caller's side contains (a loaded
	// host stretches that life to 6 s and more). Unthrottled, the loop alone
	// would take a whole CPU for 3 s.
	if limit := max(1500*time.Millisecond, life/4+500*time.Millisecond); res.CPUTime > limit {
		t.Fatalf("busy loop used %s of CPU in %s (sandbox life %s) with a 0.25 CPU quota; at most %s allowed",
			res.CPUTime, res.Duration, life.Round(time.Millisecond), limit)
	}
	if res.CPUTime < 200*time.Millisecond {
		t.Fatalf("CPU time not accounted: %s", res.CPUTime)
	}
}

// B8: wall time, not CPU time, is enforced.
func (s *suite) b8Sleep(t *testing.T) {
	start := time.Now()
	res := s.run(t, sandbox.Spec{Argv: []string{"sleep", "600"}, Limits: sandbox.Limits{TimeoutMS: 2000}})
	wantStatus(t, res, sandbox.StatusTimeout)
	if el := time.Since(start); el > 10*time.Second+s.tgt.StartAllowance {
		t.Fatalf("sleep was ended after %s, deadline 2s", el)
	}
	if res.ExitCode != -1 || res.Signal == "" {
		t.Fatalf("timeout should report the killing signal: %s", short(res))
	}
	s.assertGone(t, res.ID)
}

// B9: gigabytes on both streams: at most the cap kept, flagged, job ended early,
// and the host's memory stays flat.
func (s *suite) b9Output(t *testing.T) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	res := s.run(t, sandbox.Spec{
		Argv:   []string{"sh", "-c", "yes stdout-line & yes stderr-line >&2; wait"},
		Limits: sandbox.Limits{TimeoutMS: s.slow(60000)},
	})
	wantStatus(t, res, sandbox.StatusOutputLimit)
	for _, o := range []sandbox.Output{res.Stdout, res.Stderr} {
		if int64(len(o.Data)) > (1<<20)+100 {
			t.Fatalf("kept %d bytes, cap is 1 MiB", len(o.Data))
		}
	}
	// One stream passed the 64 MiB ceiling; the job ended long before gigabytes.
	if res.Stdout.TotalBytes+res.Stderr.TotalBytes > 200<<20 {
		t.Fatalf("job was not ended early: %d + %d bytes", res.Stdout.TotalBytes, res.Stderr.TotalBytes)
	}
	if !res.Stdout.Truncated && !res.Stderr.Truncated {
		t.Fatal("no stream flagged truncated")
	}
	trunc := res.Stdout
	if res.Stderr.Truncated {
		trunc = res.Stderr
	}
	if !bytes.Contains(trunc.Data, []byte("bytes dropped ...]")) || trunc.DroppedBytes <= 0 {
		t.Fatalf("truncated stream has no marker or dropped count: dropped=%d", trunc.DroppedBytes)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grow := int64(after.HeapInuse) - int64(before.HeapInuse); grow > 64<<20 {
		t.Fatalf("host heap grew by %d bytes while relaying output", grow)
	}
}

// B10: one 100 MB line, invalid UTF-8 and NUL bytes come back safely encoded.
func (s *suite) b10Bytes(t *testing.T) {
	long := s.run(t, sandbox.Spec{
		Argv:   []string{"python3", "-c", "import sys; sys.stdout.buffer.write(b'a' * (100 << 20))"},
		Limits: sandbox.Limits{TimeoutMS: s.slow(60000), OutputCeilingBytes: 128 << 20},
	})
	wantStatus(t, long, sandbox.StatusOK)
	if long.Stdout.TotalBytes != 100<<20 || !long.Stdout.Truncated || len(long.Stdout.Data) > (1<<20)+100 {
		t.Fatalf("100 MB line: total=%d truncated=%v kept=%d", long.Stdout.TotalBytes, long.Stdout.Truncated, len(long.Stdout.Data))
	}

	raw := []byte("ok\xff\xfe\x00nul\x00\xc3\x28 end")
	res := s.run(t, sandbox.Spec{
		Argv: []string{"python3", "-c", "import sys; sys.stdout.buffer.write(bytes.fromhex(sys.argv[1]))", hexOf(raw)},
	})
	wantStatus(t, res, sandbox.StatusOK)
	if !bytes.Equal(res.Stdout.Data, raw) {
		t.Fatalf("bytes changed: got %q want %q", res.Stdout.Data, raw)
	}
	w := res.Wire()
	if w.StdoutEncoding != sandbox.EncodingBase64 {
		t.Fatalf("invalid UTF-8 must travel as base64, got %q", w.StdoutEncoding)
	}
	back, err := sandbox.FromWire(w)
	if err != nil || !bytes.Equal(back.Stdout.Data, raw) {
		t.Fatalf("wire round trip lost bytes: %v %q", err, back.Stdout.Data)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

package securitytest

import (
	"bytes"
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
	var wg sync.WaitGroup
	var side sandbox.Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(500 * time.Millisecond) // let the bomb get going
		side = s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", "echo beside"}})
	}()
	res := s.run(t, sandbox.Spec{
		Argv:   []string{"sh", "-c", "f(){ f | f & }; f; sleep 3; echo survived"},
		Limits: sandbox.Limits{TimeoutMS: 8000, Pids: 64},
	})
	wg.Wait()
	if !strings.Contains(string(res.Stderr.Data), "fork") {
		t.Fatalf("no fork failure reported by the shell: %s", short(res))
	}
	if res.Status == sandbox.StatusError {
		t.Fatalf("fork bomb broke the sandbox: %s", short(res))
	}
	if side.Status != sandbox.StatusOK || string(side.Stdout.Data) != "beside\n" {
		t.Fatalf("job beside the fork bomb was affected: %s", short(side))
	}
	s.assertGone(t, res.ID)
}

func (s *suite) b1ForkBombPython(t *testing.T) {
	const pids = 64
	res := s.py(t, `
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
`, sandbox.Limits{TimeoutMS: 20000, Pids: pids})
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
	var wg sync.WaitGroup
	var side sandbox.Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		side = s.run(t, sandbox.Spec{Argv: []string{"python3", "-c", "print(sum(range(1000)))"}})
	}()
	res := s.py(t, `
chunks = []
while True:
    chunks.append(bytearray(16 << 20))
`, sandbox.Limits{MemoryBytes: 96 << 20, TimeoutMS: 30000})
	wg.Wait()
	wantStatus(t, res, sandbox.StatusOOM)
	if !res.OOMKilled || res.Signal != "SIGKILL" {
		t.Fatalf("oom not reported with its signal: %s oom=%v", short(res), res.OOMKilled)
	}
	if side.Status != sandbox.StatusOK || string(side.Stdout.Data) != "499500\n" {
		t.Fatalf("job beside the memory hog was affected: %s", short(side))
	}
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
}

// B4: filling /work or /tmp is ENOSPC inside; the host disk does not move.
func (s *suite) b4Fill(t *testing.T) {
	before, _ := hostDiskFree(t)
	res := s.py(t, `
import errno
for d in ("/work", "/tmp"):
    try:
        with open(d + "/fill", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))
                f.flush()
    except OSError as e:
        print("%s=%s" % (d, errno.errorcode.get(e.errno)))
`, sandbox.Limits{WorkdirBytes: 64 << 20, TmpBytes: 32 << 20, MemoryBytes: 512 << 20})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	if got["/work"] != "ENOSPC" || got["/tmp"] != "ENOSPC" {
		t.Fatalf("filling tmpfs should fail with ENOSPC: %v (%s)", got, short(res))
	}
	after, _ := hostDiskFree(t)
	if drop := int64(before) - int64(after); drop > 48<<20 {
		t.Fatalf("host disk lost %d bytes while the job filled its tmpfs", drop)
	}
}

// B5: the root filesystem is read-only.
func (s *suite) b5ReadOnly(t *testing.T) {
	res := s.py(t, `
import errno, os
for p in ("/x", "/usr/x", "/etc/x", "/bin/x", "/var/x"):
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
`, sandbox.Limits{})
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

// B6: a million tiny files and a 10 GB fallocate fail inside the quota.
func (s *suite) b6Files(t *testing.T) {
	beforeBytes, beforeInodes := hostDiskFree(t)
	res := s.py(t, `
import errno, os
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
fd = os.open("/tmp/big", os.O_CREAT | os.O_WRONLY, 0o644)
try:
    os.posix_fallocate(fd, 0, 10 << 30)
    print("fallocate=ok")
except OSError as e:
    print("fallocate=%s" % errno.errorcode.get(e.errno))
`, sandbox.Limits{TimeoutMS: 120000, MemoryBytes: 512 << 20})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	n, _ := strconv.Atoi(got["files"])
	if got["files_error"] != "ENOSPC" || n >= 1000000 {
		t.Fatalf("a million files should fail with ENOSPC inside the quota: %v", got)
	}
	if got["fallocate"] != "ENOSPC" {
		t.Fatalf("10 GB fallocate should fail with ENOSPC: %v", got)
	}
	afterBytes, afterInodes := hostDiskFree(t)
	if drop := int64(beforeBytes) - int64(afterBytes); drop > 48<<20 {
		t.Fatalf("host disk lost %d bytes", drop)
	}
	if drop := int64(beforeInodes) - int64(afterInodes); drop > 20000 {
		t.Fatalf("host lost %d inodes", drop)
	}
}

// B7: a busy loop is killed at the wall deadline and throttled to its quota.
func (s *suite) b7BusyLoop(t *testing.T) {
	res := s.run(t, sandbox.Spec{
		Argv:   []string{"python3", "-c", "while True: pass"},
		Limits: sandbox.Limits{TimeoutMS: 3000, MilliCPUs: 250},
	})
	wantStatus(t, res, sandbox.StatusTimeout)
	if res.Duration > 6*time.Second {
		t.Fatalf("killed too late: %s", short(res))
	}
	// A quarter of a CPU for ~3 s is ~750 ms of CPU; allow for accounting slop.
	if res.CPUTime > 1500*time.Millisecond {
		t.Fatalf("busy loop used %s of CPU in %s with a 0.25 CPU quota", res.CPUTime, res.Duration)
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
	if el := time.Since(start); el > 10*time.Second {
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
		Limits: sandbox.Limits{TimeoutMS: 60000},
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
		Limits: sandbox.Limits{TimeoutMS: 60000, OutputCeilingBytes: 128 << 20},
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
	back, err := w.Result()
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

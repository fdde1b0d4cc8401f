package oci_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/cgroupstat"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// ask returns the number the session's ocitest.MemoryHolder holds now.
func ask(t *testing.T, s *sandbox.Sandbox) int64 {
	t.Helper()
	res, err := s.Exec(t.Context(), sandbox.ExecSpec{Argv: []string{"sh", "-c", ocitest.AskHolder}})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("ask %s: %v %s %q", s.ID(), err, res.Status, res.Stderr.Data)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(res.Stdout.Data)), 10, 64)
	if err != nil {
		t.Fatalf("answer %q: %v", res.Stdout.Data, err)
	}
	return n
}

// TestSessionsGVisorMemorySnapshot: a checkpoint of a running gVisor
// session keeps a process's memory; two forks restored from it each start
// with that memory and diverge after; the original runs on; /work's set-id
// bits are dropped; closing everything leaves no sandbox or state behind.
func TestSessionsGVisorMemorySnapshot(t *testing.T) {
	opts := ocitest.GVisorOptions(t)
	rt := ocitest.NewGVisor(t, opts)
	m := sandboxtest.SessionManager(t, rt, sandbox.SessionOptions{})
	open := func(spec sandbox.SessionSpec) *sandbox.Sandbox {
		t.Helper()
		s, err := m.OpenSession(t.Context(), spec)
		if err != nil {
			t.Fatalf("open session: %v", err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		return s
	}
	orig := open(sandbox.SessionSpec{Files: map[string][]byte{"holder.py": []byte(ocitest.MemoryHolder)}})
	res, err := orig.Exec(t.Context(), sandbox.ExecSpec{Argv: []string{"sh", "-c",
		"echo kept > /tmp/t; echo x > /work/suid; chmod 4755 /work/suid; setsid python3 /work/holder.py >/dev/null 2>&1 </dev/null & sleep 0.5; echo started"}})
	if err != nil || string(res.Stdout.Data) != "started\n" {
		t.Fatalf("start the holder: %v %s %q %q", err, res.Status, res.Stdout.Data, res.Stderr.Data)
	}
	a := ask(t, orig)

	dir := filepath.Join(t.TempDir(), "ck")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	mem, err := orig.SnapshotMemory(t.Context(), dir)
	if err != nil {
		t.Fatalf("memory snapshot: %v", err)
	}
	t.Logf("checkpoint and restore in place: %v, %d bytes", time.Since(t0), mem.SizeBytes)
	if mem.SizeBytes <= 0 || mem.Image != sandboxtest.Image() {
		t.Fatalf("snapshot %+v", mem)
	}
	// The original runs on from where it was.
	if got := ask(t, orig); got != a+1 {
		t.Fatalf("original after its checkpoint answered %d, want %d", got, a+1)
	}

	forks := make([]*sandbox.Sandbox, 2)
	for k := range forks {
		t1 := time.Now()
		forks[k] = open(sandbox.SessionSpec{Memory: &mem})
		t.Logf("fork %d restored in %v", k, time.Since(t1))
	}
	// Each fork starts with the memory of the checkpoint: the number the
	// holder held then, not what the original counted since.
	for k, f := range forks {
		if got := ask(t, f); got != a+1 {
			t.Fatalf("fork %d answered %d, want %d (the memory at the checkpoint)", k, got, a+1)
		}
	}
	// They diverge: what one is told, the other and the original never see.
	res, err = forks[0].Exec(t.Context(), sandbox.ExecSpec{Argv: []string{"sh", "-c", "echo 1000 > /work/set.tmp; mv /work/set.tmp /work/set; echo mine > /tmp/t"}})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("set: %v %s %q", err, res.Status, res.Stderr.Data)
	}
	time.Sleep(200 * time.Millisecond)
	if got := ask(t, forks[0]); got != 1000 {
		t.Fatalf("fork 0 answered %d after being set to 1000", got)
	}
	if got := ask(t, forks[1]); got != a+2 {
		t.Fatalf("fork 1 answered %d, want %d (its own count)", got, a+2)
	}
	if got := ask(t, orig); got != a+2 {
		t.Fatalf("original answered %d, want %d", got, a+2)
	}
	for k, want := range map[int]string{0: "mine\n", 1: "kept\n"} {
		b, err := forks[k].GetFile(t.Context(), "/work/../tmp/t")
		if err == nil {
			t.Fatalf("a path out of /work was read: %q", b)
		}
		res, err := forks[k].Exec(t.Context(), sandbox.ExecSpec{Argv: []string{"sh", "-c", "cat /tmp/t; find /work/suid -printf '%m\\n'"}})
		if err != nil || string(res.Stdout.Data) != want+"755\n" {
			t.Fatalf("fork %d: /tmp/t and the mode of /work/suid: %v %q %q, want %q", k, err, res.Stdout.Data, res.Stderr.Data, want+"755\n")
		}
	}

	// Everything closed leaves nothing: no sandbox listed, no bundle, no
	// runsc state.
	for _, s := range append(forks, orig) {
		if err := s.Close(t.Context()); err != nil {
			t.Fatalf("close %s: %v", s.ID(), err)
		}
	}
	list, err := rt.List(t.Context())
	if err != nil || len(list) != 0 {
		t.Fatalf("after close the runtime lists %v (%v)", list, err)
	}
	runs, _ := os.ReadDir(filepath.Join(opts.StateDir, "runs"))
	if len(runs) != 0 {
		t.Fatalf("bundles left: %v", runs)
	}
	left, _ := filepath.Glob(filepath.Join(opts.StateDir, "runsc", "*.state"))
	if len(left) != 0 {
		t.Fatalf("runsc state left: %v", left)
	}
	for _, s := range append(forks, orig) {
		for _, dir := range []string{cgroupstat.MemoryDir("/aster/" + s.ID()), filepath.Join("/sys/fs/cgroup/pids/aster", s.ID())} {
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("cgroup %s left (%v)", dir, err)
			}
		}
	}
}

// TestSessionsMemorySnapshotRefusedOnCrun: only gVisor checkpoints; the
// refusal is an invalid request that names the runtime, and nothing runs.
func TestSessionsMemorySnapshotRefusedOnCrun(t *testing.T) {
	rt := ocitest.Runtime(t)
	m := sandboxtest.SessionManager(t, rt, sandbox.SessionOptions{})
	s, err := m.OpenSession(t.Context(), sandbox.SessionSpec{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	dir := t.TempDir()
	_, err = s.SnapshotMemory(t.Context(), dir)
	if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), "gvisor") {
		t.Fatalf("memory snapshot on %s: %v, want an invalid spec naming gvisor", rt.Name(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("wrote %v", entries)
	}
	_, err = m.OpenSession(t.Context(), sandbox.SessionSpec{Memory: &sandbox.MemorySnapshot{Dir: dir, Image: sandboxtest.Image(), Limits: sandbox.DefaultLimits()}})
	if !errors.Is(err, sandbox.ErrInvalidSpec) {
		t.Fatalf("restore on %s: %v, want an invalid spec", rt.Name(), err)
	}
}

// BenchmarkSessionMemorySnapshotGVisor measures, per iteration, a memory
// snapshot of a gVisor session that runs a python process (the whole call:
// the set-id check, runsc checkpoint and the restore in place), a fork
// restored from it (until it runs), the checkpoint's size on disk and the
// fork's memory charge once it has answered from its restored memory.
//
//	go test -run '^$' -bench SessionMemorySnapshotGVisor -benchtime 5x ./internal/sandbox/oci/
func BenchmarkSessionMemorySnapshotGVisor(b *testing.B) {
	opts := ocitest.GVisorOptions(b)
	rt := ocitest.NewGVisor(b, opts)
	m := sandboxtest.SessionManager(b, rt, sandbox.SessionOptions{})
	ctx := context.Background()
	orig, err := m.OpenSession(ctx, sandbox.SessionSpec{Files: map[string][]byte{"holder.py": []byte(ocitest.MemoryHolder)}})
	if err != nil {
		b.Fatal(err)
	}
	defer orig.Close(ctx)
	if res, err := orig.Exec(ctx, sandbox.ExecSpec{Argv: []string{"sh", "-c", "setsid python3 /work/holder.py >/dev/null 2>&1 </dev/null & sleep 0.5"}}); err != nil || res.Status != sandbox.StatusOK {
		b.Fatalf("start the holder: %v %+v", err, res)
	}
	var ckpt, fork time.Duration
	var bytes, charge int64
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		mem, err := orig.SnapshotMemory(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		f, err := m.OpenSession(ctx, sandbox.SessionSpec{Memory: &mem})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		res, err := f.Exec(ctx, sandbox.ExecSpec{Argv: []string{"sh", "-c", ocitest.AskHolder}})
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("ask the fork: %v %+v", err, res)
		}
		charge += cgroupMemory(f.ID())
		f.Close(ctx)
		os.RemoveAll(dir)
		ckpt += t1.Sub(t0)
		fork += t2.Sub(t1)
		bytes += mem.SizeBytes
	}
	n := float64(b.N)
	b.ReportMetric(float64(ckpt.Milliseconds())/n, "snapshot-ms")
	b.ReportMetric(float64(fork.Milliseconds())/n, "fork-ms")
	b.ReportMetric(float64(bytes)/n/(1<<20), "checkpoint-MiB")
	b.ReportMetric(float64(charge)/n/(1<<20), "fork-cgroup-MiB")
}

// cgroupMemory is the memory charged to sandbox id's cgroup now (0 when it
// cannot be read).
func cgroupMemory(id string) int64 {
	dir := cgroupstat.MemoryDir("/aster/" + id)
	for _, f := range []string{"memory.current", "memory.usage_in_bytes"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
			n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return n
		}
	}
	return 0
}

package microvm_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/microvm"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// shared is the runtime every test of this package uses (booting under TCG
// costs seconds; the runtime itself is cheap, its caches are shared).
func manager(t *testing.T, rt *microvm.Runtime, n int) *sandbox.Manager {
	t.Helper()
	return sandboxtest.Manager(t, rt, n)
}

func run(t *testing.T, mgr *sandbox.Manager, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	if spec.Image == "" {
		spec.Image = sandboxtest.Image()
	}
	res, err := mgr.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("run %q: %v (result %+v)", spec.Argv, err, res)
	}
	return res
}

// TestRunCommand runs one command in a VM: its output, its exit code, the
// workspace and stdin, the timings of a boot.
func TestRunCommand(t *testing.T) {
	rt := microvmtest.Runtime(t)
	mgr := manager(t, rt, 2)
	res := run(t, mgr, sandbox.Spec{
		Argv:      []string{"sh", "-c", "cat /work/in.txt; read x; echo \"stdin=$x\"; id -u; echo err >&2; exit 3"},
		Workspace: sandbox.Workspace{Files: map[string][]byte{"in.txt": []byte("from the workspace\n")}},
		Stdin:     strings.NewReader("hello\n"),
		Limits:    sandbox.Limits{TimeoutMS: 30_000},
	})
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 3 {
		t.Fatalf("status %s exit %d, want exit_nonzero 3 (%s)", res.Status, res.ExitCode, res.Error)
	}
	if got, want := string(res.Stdout.Data), "from the workspace\nstdin=hello\n1000\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got := string(res.Stderr.Data); got != "err\n" {
		t.Errorf("stderr %q", got)
	}
	if res.Runtime != "microvm" {
		t.Errorf("runtime %q", res.Runtime)
	}
	t.Logf("accel %s, timings %v", rt.Accel(), res.Timings)
}

// TestGuestKernelIsNotTheHosts: uname -r and /proc/version inside are the
// guest kernel's, not the host's.
func TestGuestKernelIsNotTheHosts(t *testing.T) {
	rt := microvmtest.Runtime(t)
	mgr := manager(t, rt, 1)
	res := run(t, mgr, sandbox.Spec{Argv: []string{"sh", "-c", "uname -r; cat /proc/version"}, Limits: sandbox.Limits{TimeoutMS: 30_000}})
	if res.Status != sandbox.StatusOK {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	lines := strings.SplitN(string(res.Stdout.Data), "\n", 2)
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	host := unix.ByteSliceToString(u.Release[:])
	hostVersion, err := os.ReadFile("/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	if lines[0] != rt.GuestRelease() {
		t.Errorf("uname -r inside %q, want the guest's %q", lines[0], rt.GuestRelease())
	}
	if lines[0] == host {
		t.Errorf("uname -r inside is the host's %q", host)
	}
	if len(lines) < 2 || strings.TrimSpace(lines[1]) == strings.TrimSpace(string(hostVersion)) || !strings.Contains(lines[1], rt.GuestRelease()) {
		t.Errorf("/proc/version inside %q; host's %q", lines[1], hostVersion)
	}
}

// TestLimits: each limit of a run holds inside the VM and gives its status.
func TestLimits(t *testing.T) {
	rt := microvmtest.Runtime(t)
	mgr := manager(t, rt, 2)
	cases := []struct {
		name  string
		spec  sandbox.Spec
		check func(t *testing.T, res sandbox.Result)
	}{
		{"memory", sandbox.Spec{
			Argv:   []string{"python3", "-c", "print('start', flush=True)\nb = []\nwhile True: b.append(bytearray(8 << 20))"},
			Limits: sandbox.Limits{TimeoutMS: 60_000, MemoryBytes: 96 << 20},
		}, func(t *testing.T, res sandbox.Result) {
			if res.Status != sandbox.StatusOOM || !res.OOMKilled {
				t.Fatalf("status %s oom %v, want oom (%s)", res.Status, res.OOMKilled, res.Error)
			}
			if string(res.Stdout.Data) != "start\n" {
				t.Errorf("output before the kill not kept: %q", res.Stdout.Data)
			}
		}},
		{"timeout", sandbox.Spec{
			Argv:   []string{"sh", "-c", "echo before; sleep 600"},
			Limits: sandbox.Limits{TimeoutMS: 2_000},
		}, func(t *testing.T, res sandbox.Result) {
			if res.Status != sandbox.StatusTimeout {
				t.Fatalf("status %s, want timeout (%s)", res.Status, res.Error)
			}
			if d := res.Timings["job"]; d > 12*time.Second {
				t.Errorf("a 2s timeout took %s", d)
			}
			if string(res.Stdout.Data) != "before\n" {
				t.Errorf("stdout %q", res.Stdout.Data)
			}
		}},
		{"output", sandbox.Spec{
			Argv:   []string{"yes"},
			Limits: sandbox.Limits{TimeoutMS: 60_000, OutputBytes: 64 << 10, OutputCeilingBytes: 4 << 20},
		}, func(t *testing.T, res sandbox.Result) {
			if res.Status != sandbox.StatusOutputLimit {
				t.Fatalf("status %s, want output_limit (%s)", res.Status, res.Error)
			}
			if !res.Stdout.Truncated || int64(len(res.Stdout.Data)) > 64<<10+200 {
				t.Errorf("kept %d bytes, truncated %v", len(res.Stdout.Data), res.Stdout.Truncated)
			}
			if res.Stdout.TotalBytes > 8<<20 {
				t.Errorf("job wrote %d bytes past a 4 MiB ceiling", res.Stdout.TotalBytes)
			}
		}},
		{"workdir", sandbox.Spec{
			Argv:   []string{"sh", "-c", "for d in /work /tmp; do dd if=/dev/zero of=$d/big bs=1M count=64 2>&1 | grep -o 'No space left on device'; done; df -k /work | tail -1"},
			Limits: sandbox.Limits{TimeoutMS: 60_000, WorkdirBytes: 16 << 20, TmpBytes: 8 << 20},
		}, func(t *testing.T, res sandbox.Result) {
			out := string(res.Stdout.Data)
			if strings.Count(out, "No space left on device") != 2 {
				t.Fatalf("want ENOSPC in /work and /tmp, got %q (%s %s)", out, res.Status, res.Error)
			}
			if !strings.Contains(out, " 16384 ") {
				t.Errorf("/work is not 16 MiB: %q", out)
			}
		}},
	}
	// One VM at a time: under TCG several guests booting at once beside other
	// packages' tests starved each other past the hello deadline.
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, run(t, mgr, c.spec))
		})
	}
}

// TestKilledOrchestratorLeavesNothing: a VM whose host end of the port is
// closed ends by itself, and what a crash leaves (a record, a host cgroup, a
// live QEMU) is found by List and removed by Remove. (A killed Aster takes
// its QEMUs with it: the parent-death signal; TestQEMUDiesWithAster.)
func TestKilledOrchestratorLeavesNothing(t *testing.T) {
	opts := microvmtest.Options(t)
	rt := microvmtest.New(t, opts)
	ctx := t.Context()
	limits := sandbox.DefaultLimits()
	prep := func() sandbox.Instance {
		inst, err := rt.Prepare(ctx, sandbox.PrepareOptions{RunID: sandbox.NewRunID(), Image: sandboxtest.Image(), Limits: limits, Deadline: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	// 1: the host side goes away; the guest's init sees the port close and
	// the VM ends without anyone killing it.
	a := prep()
	pid := microvm.QEMUPid(a)
	microvm.DropHost(a)
	// A fraction of a second, even under TCG (init exits, the kernel
	// panics and resets by a triple fault); the bound is only for a
	// loaded machine.
	const gone = 2 * time.Minute
	deadline := time.Now().Add(gone)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for unix.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		<-tick.C
	}
	if unix.Kill(pid, 0) == nil {
		t.Fatalf("qemu %d still running %s after its host went away", pid, gone)
	}
	// 2: a VM left running by a crashed orchestrator is listed and removed.
	b := prep()
	list, err := rt.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range list {
		if m.ID == b.ID() && m.State == "running" && !m.Deadline.IsZero() {
			found = true
		}
	}
	if !found {
		t.Fatalf("live VM %s not listed as running: %+v", b.ID(), list)
	}
	bpid := microvm.QEMUPid(b)
	if err := rt.Remove(ctx, b.ID()); err != nil {
		t.Fatal(err)
	}
	if unix.Kill(bpid, 0) == nil {
		if st, _ := os.ReadFile("/proc/" + strconv.Itoa(bpid) + "/stat"); !strings.Contains(string(st), ") Z") {
			t.Fatalf("qemu %d survived Remove", bpid)
		}
	}
	for _, p := range []string{filepath.Join(opts.StateDir, "runs", b.ID()+".json"), "/sys/fs/cgroup/memory/aster-microvm/" + b.ID(), "/sys/fs/cgroup/aster-microvm/" + b.ID()} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left after Remove", p)
		}
	}
	a.Close(ctx)
	b.Close(ctx)
	if list, _ := rt.List(ctx); len(list) != 0 {
		t.Errorf("left after Close: %+v", list)
	}
}

// TestWarmPool: pre-booted VMs serve paced requests warm, each VM once.
func TestWarmPool(t *testing.T) {
	rt := microvmtest.Runtime(t)
	m, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime: rt, Images: []string{sandboxtest.Image()}, Defaults: sandbox.DefaultLimits(),
		Bounds: sandbox.LimitBounds(), MaxConcurrent: 2, QueueSize: 16, QueueTimeout: 5 * time.Minute,
		Pool: sandbox.PoolOptions{Warm: 1, BackgroundClose: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	seen := map[string]bool{}
	for i := range 3 {
		if err := m.WaitWarm(ctx); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		res, err := m.Run(ctx, sandbox.Spec{Argv: []string{"sh", "-c", "echo $X"}, Env: map[string]string{"X": "job"}})
		took := time.Since(t0)
		if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout.Data) != "job\n" {
			t.Fatalf("run %d: %v %+v", i, err, res.Wire())
		}
		if _, warm := res.Timings["warm"]; !warm {
			t.Fatalf("run %d went cold: %v", i, res.Timings)
		}
		if seen[res.ID] {
			t.Fatalf("VM %s served twice", res.ID)
		}
		seen[res.ID] = true
		t.Logf("warm run %d: %s", i, took)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if list, _ := rt.List(ctx); len(list) != 0 {
		t.Errorf("VMs left after Close: %+v", list)
	}
}

// TestQEMUDiesWithAster: an Aster process killed with SIGKILL takes its VMs
// with it (QEMU's parent-death signal), and what it left in the state
// directory (the record, the host cgroup) is reaped by the next process.
func TestQEMUDiesWithAster(t *testing.T) {
	if dir := os.Getenv("ASTER_TEST_MICROVM_HELPER_STATE"); dir != "" {
		// The helper: boot one VM, say its QEMU's pid, wait to be killed.
		opts := microvmtest.Options(t)
		opts.StateDir = dir
		rt := microvmtest.New(t, opts)
		inst, err := rt.Prepare(context.Background(), sandbox.PrepareOptions{RunID: sandbox.NewRunID(), Image: sandboxtest.Image(), Limits: sandbox.DefaultLimits(), Deadline: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("QEMU-PID %d %s\n", microvm.QEMUPid(inst), inst.ID())
		select {}
	}
	opts := microvmtest.Options(t)
	rt := microvmtest.New(t, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestQEMUDiesWithAster$", "-test.timeout", "5m")
	cmd.Env = append(os.Environ(), "ASTER_TEST_MICROVM_HELPER_STATE="+opts.StateDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var id string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, _ := fmt.Sscanf(sc.Text(), "QEMU-PID %d %s", &pid, &id); n == 2 {
			break
		}
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the helper never booted a VM")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for unix.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		<-tick.C
	}
	if unix.Kill(pid, 0) == nil {
		unix.Kill(pid, unix.SIGKILL)
		t.Fatalf("qemu %d outlived the Aster process that started it", pid)
	}
	list, err := rt.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != id || list[0].State != "gone" {
		t.Fatalf("want the dead VM's record, listed gone: %+v", list)
	}
	if err := rt.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if list, _ := rt.List(ctx); len(list) != 0 {
		t.Errorf("left after Remove: %+v", list)
	}
	for _, p := range []string{"/sys/fs/cgroup/memory/aster-microvm/" + id, "/sys/fs/cgroup/aster-microvm/" + id} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left after Remove", p)
		}
	}
}

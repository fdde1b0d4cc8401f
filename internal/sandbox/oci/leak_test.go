package oci_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/reaper"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandbox/securitytest"
)

// TestHelperOrchestrator is not a test: TestKilledOrchestratorLeavesNothing
// runs it in a child process as an orchestrator holding one sandbox, and
// kills it with SIGKILL.
func TestHelperOrchestrator(t *testing.T) {
	state := os.Getenv("ASTER_OCI_HELPER_STATE")
	if state == "" {
		t.Skip("helper process only")
	}
	options := ocitest.Options
	if os.Getenv("ASTER_OCI_HELPER_GVISOR") == "1" {
		options = ocitest.GVisorOptions
	}
	opts := options(t)
	// This process is killed, so its cleanups never run: use only the
	// parent's directory.
	os.RemoveAll(opts.StateDir)
	opts.StateDir = state
	rt, err := oci.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := rt.Prepare(context.Background(), sandbox.PrepareOptions{
		RunID: "r-leak", Image: sandboxtest.Image(), Limits: sandbox.DefaultLimits(), Deadline: time.Now().Add(time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("ready " + inst.ID() + "\n")
	go inst.Run(context.Background(), sandbox.Job{Argv: []string{"sleep", "600"}, Limits: sandbox.DefaultLimits()})
	select {} // until killed
}

// TestKilledOrchestratorLeavesNothing is SECURITY.md G4 for the oci runtime:
// `kill -9` of the process that holds a sandbox mid-run. The sandbox must end
// by itself (its init sees its stdin close), leave no process or cgroup, and
// the reaper of a later process must clear its record once past the deadline.
func TestKilledOrchestratorLeavesNothing(t *testing.T) {
	ocitest.Runtime(t) // skips where the runtime cannot run
	killedOrchestrator(t, false)
}

// TestGVisorKilledOrchestratorLeavesNothing is the same on gVisor: the
// sentry, the gofer and runsc's state go with the sandbox's init.
func TestGVisorKilledOrchestratorLeavesNothing(t *testing.T) {
	ocitest.GVisor(t)
	killedOrchestrator(t, true)
}

func killedOrchestrator(t *testing.T, gvisor bool) {
	state, err := os.MkdirTemp("/dev/shm", "aster-oci-leak-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ocitest.RemoveState(state) })
	env := []string{"ASTER_OCI_HELPER_STATE=" + state}
	if gvisor {
		env = append(env, "ASTER_OCI_HELPER_GVISOR=1")
	}
	cmd, id := sandboxtest.StartHelperOrchestrator(t, env...)
	// Let the job start, then kill the orchestrator without a chance to clean up.
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	cgroup := filepath.Join("/sys/fs/cgroup/memory/aster", id)
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs := processesMentioning(id)
		_, cgErr := os.Stat(cgroup)
		if len(procs) == 0 && errors.Is(cgErr, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after the orchestrator died: processes %v, cgroup present=%v", procs, cgErr == nil)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The record stays until the reaper of a later process removes it.
	options := ocitest.Options
	if gvisor {
		options = ocitest.GVisorOptions
	}
	opts := options(t)
	opts.StateDir = state
	later := ocitest.New(t, opts)
	list, err := later.List(t.Context())
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].RunID != "r-leak" {
		t.Fatalf("list after the crash: %+v %v", list, err)
	}
	ro := reaper.ForRuntime(later)
	ro.Now = func() time.Time { return list[0].Deadline.Add(reaper.DefaultGrace + time.Second) }
	actions, err := reaper.New(ro).Once(t.Context(), false)
	if err != nil || len(actions) != 1 || !actions[0].Removed {
		t.Fatalf("reaper: %+v %v", actions, err)
	}
	if list, _ := later.List(t.Context()); len(list) != 0 {
		t.Fatalf("still listed after the reaper: %+v", list)
	}
	if _, err := os.Stat(filepath.Join(state, "runs", id)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("run directory left: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "runsc", "*"+id+"*")); len(left) != 0 {
		t.Fatalf("runsc state left: %v", left)
	}
	// Aster's own pids cgroup of a gVisor sandbox (cgroup v1) outlives the
	// crash; the reaper removes it.
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/pids/aster", id)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("pids cgroup left after the reaper: %v", err)
	}
}

// TestRemoveKillsALiveSandbox is the reaper's other half: a sandbox still
// running past its deadline is killed and every trace of it removed.
func TestRemoveKillsALiveSandbox(t *testing.T) {
	opts := ocitest.Options(t)
	rt := ocitest.New(t, opts)
	inst, err := rt.Prepare(t.Context(), sandbox.PrepareOptions{RunID: sandbox.NewRunID(), Image: sandboxtest.Image(), Limits: sandbox.DefaultLimits(), Deadline: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	securitytest.RemoveEndsLiveRun(t, rt, inst, 200*time.Millisecond, 10*time.Second)
	if procs := processesMentioning(inst.ID()); len(procs) != 0 {
		t.Fatalf("processes left: %v", procs)
	}
	if _, err := os.Stat(filepath.Join(opts.StateDir, "runs", inst.ID())); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("run directory left: %v", err)
	}
	// Removing it again is not an error.
	if err := rt.Remove(t.Context(), inst.ID()); err != nil {
		t.Fatalf("second remove: %v", err)
	}
}

// processesMentioning lists the command lines of processes that name id.
func processesMentioning(id string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), id) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

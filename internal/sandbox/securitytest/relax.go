package securitytest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// MostPermissiveLimits are the largest limits the API accepts (within the
// bounds), at the given CPU share: what a request asking for everything gets.
func MostPermissiveLimits(milliCPUs int64) sandbox.Limits {
	return sandbox.Limits{TimeoutMS: sandbox.MaxTimeoutMS, MemoryBytes: 2 << 30, MilliCPUs: milliCPUs, Pids: sandbox.MaxPids,
		OutputBytes: sandbox.MaxOutputBytes, OutputCeilingBytes: sandbox.MaxOutputCeilingBytes, WorkdirBytes: 1 << 30, TmpBytes: 1 << 30}
}

// NoRequestCanRelaxHardening (SECURITY.md A) prepares a sandbox on rt with
// MostPermissiveLimits and checks it is hardened all the same: a sandbox uid
// from the identity range, no capabilities, no_new_privs, only a loopback
// interface, a read-only root. The Docker and oci runtimes' tests run it; the
// Kubernetes Pod has its own form (a fixed uid, the node's routes).
func NoRequestCanRelaxHardening(t *testing.T, rt sandbox.Runtime, image, runID string) {
	t.Helper()
	res := RunMostPermissive(t, rt, image, runID, 2000, "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | tr -d '\\t'; ls /sys/class/net; touch /etc/x 2>&1 | grep -c 'Read-only'")
	uid, rest, _ := strings.Cut(string(res.Stdout.Data), "\n")
	want := "CapEff:0000000000000000\nNoNewPrivs:1\nlo\n1\n"
	if n, err := strconv.Atoi(uid); err != nil || n < runtimekit.DefaultIdentityBase || rest != want {
		t.Fatalf("hardening relaxed by limits: got %q want a sandbox uid, then %q", res.Stdout.Data, want)
	}
}

// RunMostPermissive prepares a sandbox on rt with MostPermissiveLimits(milliCPUs)
// and runs script in it under the same limits: the runtimes whose sandbox
// differs from the shared form (a Pod, a VM) check its output their own way.
func RunMostPermissive(t *testing.T, rt sandbox.Runtime, image, runID string, milliCPUs int64, script string) sandbox.Result {
	t.Helper()
	ctx := t.Context()
	l := MostPermissiveLimits(milliCPUs)
	if err := sandbox.LimitBounds().Check(l); err != nil {
		t.Fatal(err)
	}
	inst, err := rt.Prepare(ctx, sandbox.PrepareOptions{RunID: runID, Image: image, Limits: l, Deadline: time.Now().Add(3 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	res, err := inst.Run(ctx, sandbox.Job{Argv: []string{"sh", "-c", script}, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// RemoveEndsLiveRun is the reaper's other half on any runtime: a job of inst
// still running (sleep 600) is ended by rt.Remove of its sandbox, within wait,
// with a status other than ok. settle is how long the job is given to start.
// The caller then checks that nothing of the sandbox is left, its own way.
func RemoveEndsLiveRun(t *testing.T, rt sandbox.Runtime, inst sandbox.Instance, settle, wait time.Duration) {
	t.Helper()
	done := make(chan sandbox.Result, 1)
	go func() {
		res, _ := inst.Run(context.Background(), sandbox.Job{Argv: []string{"sleep", "600"}, Limits: sandbox.DefaultLimits()})
		done <- res
	}()
	time.Sleep(settle)
	if err := rt.Remove(t.Context(), inst.ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.Status == sandbox.StatusOK {
			t.Fatalf("a removed sandbox finished ok: %+v", res.Wire())
		}
	case <-time.After(wait):
		t.Fatal("the job outlived Remove")
	}
	inst.Close(context.Background())
}

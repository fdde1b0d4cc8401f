package oci_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestLatencyProbe prints where a cold oci run spends its time next to the
// bare runtime on the same bundle. It is a probe for people, not a check.
func TestLatencyProbe(t *testing.T) {
	rt, mgr := probeSetup(t)
	n := 40
	var bare, totals []time.Duration
	phases := map[string][]time.Duration{}
	// Interleaved, so that load from elsewhere hits both alike.
	for i := range n {
		dir := bareBundle(t, rt, "/bin/true")
		t0 := time.Now()
		if err := rt.RunBundle(t.Context(), dir, io.Discard, os.Stderr); err != nil {
			t.Fatalf("bare run %d: %v", i, err)
		}
		bare = append(bare, time.Since(t0))

		t0 = time.Now()
		res, err := mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}})
		if err != nil || res.Status != sandbox.StatusOK {
			t.Fatalf("%v %+v", err, res.Wire())
		}
		totals = append(totals, time.Since(t0))
		for k, v := range res.Timings {
			phases[k] = append(phases[k], v)
		}
	}
	p := func(v []time.Duration) string {
		slices.Sort(v)
		return (v[len(v)/2]).Round(10*time.Microsecond).String() + " / p90 " + v[len(v)*9/10].Round(10*time.Microsecond).String()
	}
	t.Logf("bare %s run: p50 %s", ocitest.Binary(), p(bare))
	t.Logf("aster cold:   p50 %s", p(totals))
	for k, v := range phases {
		t.Logf("  %-8s p50 %s", k, p(v))
	}
}

// TestInitStartProbe compares bare crun running /bin/true with bare crun
// running aster-init (hello, then EOF on stdin, exit): init's own start cost.
func TestInitStartProbe(t *testing.T) {
	rt, _ := probeSetup(t)
	run := func(argv string) time.Duration {
		dir := bareBundle(t, rt, argv)
		t0 := time.Now()
		if err := rt.RunBundle(t.Context(), dir, io.Discard, os.Stderr); err != nil {
			t.Fatalf("bare run: %v", err)
		}
		return time.Since(t0)
	}
	var a, b []time.Duration
	for range 40 {
		a = append(a, run("/bin/true"))
		b = append(b, run("/.aster/init"))
	}
	slices.Sort(a)
	slices.Sort(b)
	t.Logf("bare /bin/true p50 %v; bare aster-init (hello, EOF, exit) p50 %v", a[len(a)/2], b[len(b)/2])
}

// TestCPUProbe measures host CPU per run (from /proc/stat) for the bare
// runtime and for Aster cold, sequentially, to see what a run costs beyond
// the wall clock.
func TestCPUProbe(t *testing.T) {
	rt, mgr := probeSetup(t)
	// CPU of this process and of its reaped children (the runtime binary
	// and everything in the sandbox), in ms; kernel work done elsewhere
	// (namespace teardown in kworkers) is not in it.
	var selfMS, kidsMS float64
	busy := func() float64 {
		var self, kids syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &self)
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
		ms := func(tv syscall.Timeval) float64 { return float64(tv.Sec)*1000 + float64(tv.Usec)/1000 }
		selfMS, kidsMS = ms(self.Utime)+ms(self.Stime), ms(kids.Utime)+ms(kids.Stime)
		return selfMS + kidsMS
	}
	const n = 60
	b0 := busy()
	t0 := time.Now()
	for range n {
		dir := bareBundle(t, rt, "/bin/true")
		if err := rt.RunBundle(t.Context(), dir, io.Discard, os.Stderr); err != nil {
			t.Fatal(err)
		}
	}
	bareWall, bareCPU := time.Since(t0)/n, (busy()-b0)/n
	bareSelf, bareKids := selfMS, kidsMS
	b0 = busy()
	t0 = time.Now()
	for range n {
		if _, err := mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	asterWall, asterCPU := time.Since(t0)/n, (busy()-b0)/n
	t.Logf("aster orchestrator CPU %.2f ms/run, runtime+sandbox CPU %.2f ms/run", (selfMS-bareSelf)/n, (kidsMS-bareKids)/n)
	t.Logf("bare:  wall %v  CPU %.2f ms per run", bareWall, bareCPU)
	t.Logf("aster: wall %v  CPU %.2f ms per run", asterWall, asterCPU)
}

// probeSetup skips a probe unless ASTER_OCI_PROBE is set, and returns the
// runtime and a Manager on it after one run: that run teaches the runtime
// the compiled seccomp filter, which every later bundle (the bare one too)
// then carries.
func probeSetup(t *testing.T) (*oci.Runtime, *sandbox.Manager) {
	t.Helper()
	if os.Getenv("ASTER_OCI_PROBE") == "" {
		t.Skip("set ASTER_OCI_PROBE=1")
	}
	rt := ocitest.Runtime(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	if _, err := mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	return rt, mgr
}

// bareBundle writes, in a new directory, a bundle that runs argv as the
// sandbox's init, for the bare runtime (no aster-init, no Manager).
func bareBundle(t *testing.T, rt *oci.Runtime, argv ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), sandbox.NewRunID())
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := rt.WriteBundle(t.Context(), sandbox.PrepareOptions{RunID: "bare", Image: sandboxtest.Image(), Limits: sandbox.DefaultLimits(), Deadline: time.Now().Add(time.Minute)}, dir, argv); err != nil {
		t.Fatal(err)
	}
	return dir
}

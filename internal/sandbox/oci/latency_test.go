package oci_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestLatencyProbe prints where a cold oci run spends its time next to the
// bare runtime on the same bundle. It is a probe for people, not a check.
func TestLatencyProbe(t *testing.T) {
	if os.Getenv("ASTER_OCI_PROBE") == "" {
		t.Skip("set ASTER_OCI_PROBE=1")
	}
	rt := ocitest.Runtime(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	n := 40
	// One run first: it teaches the runtime the compiled seccomp filter, which
	// every later bundle (the bare one too) then carries.
	if _, err := mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	var bare, totals []time.Duration
	phases := map[string][]time.Duration{}
	// Interleaved, so that load from elsewhere hits both alike.
	for i := range n {
		dir := filepath.Join(t.TempDir(), sandbox.NewRunID())
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := rt.WriteBundle(t.Context(), sandbox.PrepareOptions{RunID: "bare", Image: sandboxtest.Image(), Limits: config.DefaultLimits(), Deadline: time.Now().Add(time.Minute)}, dir, []string{"/bin/true"}); err != nil {
			t.Fatal(err)
		}
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

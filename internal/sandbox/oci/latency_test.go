package oci_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

func TestLatencyProbe(t *testing.T) {
	if os.Getenv("ASTER_OCI_PROBE") == "" {
		t.Skip("set ASTER_OCI_PROBE=1")
	}
	rt := ocitest.Runtime(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	var totals []time.Duration
	phases := map[string][]time.Duration{}
	for i := 0; i < 40; i++ {
		t0 := time.Now()
		res, err := mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}})
		if err != nil || res.Status != sandbox.StatusOK {
			t.Fatalf("%v %+v", err, res.Wire())
		}
		totals = append(totals, time.Since(t0))
		for k, v := range res.Timings {
			phases[k] = append(phases[k], v)
		}
	}
	slices.Sort(totals)
	t.Logf("total p50 %v p90 %v min %v", totals[len(totals)/2], totals[len(totals)*9/10], totals[0])
	for k, v := range phases {
		slices.Sort(v)
		t.Logf("%s p50 %v", k, v[len(v)/2])
	}
}

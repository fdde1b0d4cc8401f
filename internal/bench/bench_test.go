package bench_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/bench"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestHarnessOCI runs a short harness over the oci systems and checks that
// every cell measured something without errors.
func TestHarnessOCI(t *testing.T) {
	if testing.Short() {
		t.Skip("real sandboxes")
	}
	rt := ocitest.Runtime(t)
	cfg := bench.Config{
		Systems:     []string{bench.SysBareCrun, bench.SysOCICold, bench.SysOCIWarm},
		Jobs:        bench.DefaultJobs()[:1],
		Concurrency: []int{1, 2},
		Duration:    500 * time.Millisecond,
		MinRequests: 3,
		PacedRounds: 2,
		Pairs:       5,
	}
	if testing.Verbose() {
		cfg.Progress = os.Stderr
	}
	rep, err := bench.Run(t.Context(), cfg, bench.Env{Image: sandboxtest.Image(), Defaults: config.DefaultLimits(), Config: config.Default(), OCI: rt})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) > 0 {
		t.Fatalf("skipped: %v", rep.Skipped)
	}
	if len(rep.Cells) != 6 {
		t.Fatalf("%d cells, want 6", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		if c.Errors > 0 || c.Requests < 3 || c.P50MS <= 0 || c.ThroughputRPS <= 0 {
			t.Errorf("cell %+v", c)
		}
		if c.System == bench.SysOCIWarm && (c.PacedP50MS == nil || *c.PacedHitRate < 1) {
			t.Errorf("warm cell without all-hit paced rounds: %+v", c)
		}
		if c.System == bench.SysBareCrun {
			if len(c.Phases) > 0 {
				t.Errorf("bare crun has phases: %v", c.Phases)
			}
			continue
		}
		// Every phase of a run, the answer's writing and the removal after it included,
		// once per run of the closed loop.
		want := []string{"admission", "queue", "prepare", "job", "result", "remove", "total"}
		if c.System == bench.SysOCICold {
			want = append(want, "create", "start", "init")
		}
		for _, p := range want {
			if st, ok := c.Phases[p]; !ok || st.N != c.Requests {
				t.Errorf("%s c=%d: phase %s %+v, want %d observations", c.System, c.Concurrency, p, st, c.Requests)
			}
		}
	}
	if len(rep.Pairs) != 1 || rep.Pairs[0].Ratio <= 0 || rep.Pairs[0].Errors > 0 {
		t.Fatalf("pairs %+v", rep.Pairs)
	}
	if rep.Machine.Cores < 1 || len(rep.Targets) == 0 {
		t.Fatalf("report %+v", rep)
	}
	if testing.Verbose() {
		rep.PrintTable(os.Stderr)
	}
}

// TestHarnessGVisor runs a short harness over the gVisor systems, one client
// each: every cell measured something without errors, the warm one from a
// full pool, and the report names the runsc in use.
func TestHarnessGVisor(t *testing.T) {
	if testing.Short() {
		t.Skip("real sandboxes")
	}
	rt := ocitest.GVisor(t)
	cfg := bench.Config{
		Systems:     []string{bench.SysBareRunsc, bench.SysGVisorCold, bench.SysGVisorWarm},
		Jobs:        bench.DefaultJobs()[:1],
		Concurrency: []int{1},
		Duration:    500 * time.Millisecond,
		MinRequests: 3,
		PacedRounds: 2,
	}
	rep, err := bench.Run(t.Context(), cfg, bench.Env{Image: sandboxtest.Image(), Defaults: config.DefaultLimits(), Config: config.Default(), GVisor: rt})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) > 0 || len(rep.Cells) != 3 {
		t.Fatalf("skipped %v, %d cells, want 3", rep.Skipped, len(rep.Cells))
	}
	for _, c := range rep.Cells {
		if c.Errors > 0 || c.Requests < 3 || c.P50MS <= 0 {
			t.Errorf("cell %+v", c)
		}
		if c.System == bench.SysGVisorWarm && (c.PacedP50MS == nil || *c.PacedHitRate < 1) {
			t.Errorf("warm cell without all-hit paced rounds: %+v", c)
		}
	}
	found := false
	for _, v := range rep.Machine.Runtimes {
		found = found || strings.HasPrefix(v, "runsc ")
	}
	if !found {
		t.Errorf("the report does not name the runsc: %v", rep.Machine.Runtimes)
	}
}

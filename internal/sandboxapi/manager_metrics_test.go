package sandboxapi

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asterhq/aster/internal/sandbox"
)

// The gauges read the manager's admission counters at every scrape.
func TestRegisterManagerGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	stats := sandbox.Stats{Running: 3, Queued: 2, MaxConcurrent: 8}
	if err := RegisterManagerGauges(reg, func() sandbox.Stats { return stats }); err != nil {
		t.Fatal(err)
	}
	read := func() map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			out[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
		}
		return out
	}
	want := map[string]float64{"aster_sandbox_running": 3, "aster_sandbox_queue_depth": 2, "aster_sandbox_max_concurrent": 8}
	got := read()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	stats.Running = 7
	if got := read()["aster_sandbox_running"]; got != 7 {
		t.Errorf("after a change aster_sandbox_running = %v, want 7", got)
	}
	if err := RegisterManagerGauges(reg, func() sandbox.Stats { return stats }); err == nil {
		t.Error("registering the gauges twice in one registry: no error")
	}
}

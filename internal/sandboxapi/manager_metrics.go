package sandboxapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asterhq/aster/internal/sandbox"
)

// RegisterManagerGauges adds, to a registry other than the sandbox server's
// (`aster app serve` runs its sandboxes in process), the admission gauges the
// sandbox server has under the same names: runs holding a sandbox slot, runs
// waiting for one, and the slots. stats is read at every scrape.
func RegisterManagerGauges(reg prometheus.Registerer, stats func() sandbox.Stats) error {
	for _, g := range []struct {
		name, help string
		value      func(sandbox.Stats) int
	}{
		{"aster_sandbox_running", "Runs holding a sandbox slot.", func(s sandbox.Stats) int { return s.Running }},
		{"aster_sandbox_queue_depth", "Runs waiting for a sandbox slot.", func(s sandbox.Stats) int { return s.Queued }},
		{"aster_sandbox_max_concurrent", "Sandbox slots (--workers x --parallel in aster app serve).", func(s sandbox.Stats) int { return s.MaxConcurrent }},
	} {
		value := g.value
		if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help},
			func() float64 { return float64(value(stats())) })); err != nil {
			return err
		}
	}
	return nil
}

package sandboxapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asterhq/aster/internal/sandbox"
)

// poolCollector exports the Manager's warm pools, read at scrape time.
type poolCollector struct {
	mgr                                               *sandbox.Manager
	ready, target, preparing, hits, misses, discarded *prometheus.Desc
}

// RegisterPoolMetrics adds the warm-pool metrics of mgr to reg:
// aster_pool_ready, aster_pool_target, aster_pool_preparing (gauges) and
// aster_pool_hits_total, aster_pool_misses_total, aster_pool_discarded_total,
// each by image. Warm sandboxes also count in aster_sandbox_running: they hold
// sandbox slots.
func RegisterPoolMetrics(reg prometheus.Registerer, mgr *sandbox.Manager) error {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"image"}, nil)
	}
	return reg.Register(&poolCollector{
		mgr:       mgr,
		ready:     d("aster_pool_ready", "Warm sandboxes waiting for a job."),
		target:    d("aster_pool_target", "Warm sandboxes the pool aims to hold now (--warm, or 1 after a quiet spell)."),
		preparing: d("aster_pool_preparing", "Warm sandboxes being prepared."),
		hits:      d("aster_pool_hits_total", "Runs served by a warm sandbox."),
		misses:    d("aster_pool_misses_total", "Runs for a pooled image that found no warm sandbox and went cold."),
		discarded: d("aster_pool_discarded_total", "Warm sandboxes destroyed unused (expired, evicted, shrunk, dead, shutdown)."),
	})
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.ready, c.target, c.preparing, c.hits, c.misses, c.discarded} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.mgr.PoolStats() {
		ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(s.Ready), s.Image)
		ch <- prometheus.MustNewConstMetric(c.target, prometheus.GaugeValue, float64(s.Target), s.Image)
		ch <- prometheus.MustNewConstMetric(c.preparing, prometheus.GaugeValue, float64(s.Preparing), s.Image)
		ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.Hits), s.Image)
		ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(s.Misses), s.Image)
		ch <- prometheus.MustNewConstMetric(c.discarded, prometheus.CounterValue, float64(s.Discarded), s.Image)
	}
}

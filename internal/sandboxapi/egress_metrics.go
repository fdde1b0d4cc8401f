package sandboxapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asterhq/aster/internal/egress"
)

// egressCollector exports a policy's tunnel counters, read at scrape time.
type egressCollector struct {
	c                 *egress.Counters
	opened, bytesDesc *prometheus.Desc // opened: the tunnels by outcome
	byHost            *prometheus.Desc
}

// RegisterEgressMetrics adds the egress relay's counters of p to reg:
// aster_egress_tunnels_total{outcome="opened|refused|cut"} and
// aster_egress_bytes_total{direction="in|out"} (in: from destinations to
// sandboxes) and aster_egress_host_tunnels_total{host, outcome} (host: an
// allow-list entry, or "other"; outcome: opened, cut or a refusal kind). A
// policy without counters adds nothing.
func RegisterEgressMetrics(reg prometheus.Registerer, p *egress.Policy) error {
	if p == nil || p.Counters == nil {
		return nil
	}
	tunnels := prometheus.NewDesc("aster_egress_tunnels_total", "Egress tunnels asked for by sandboxes, by outcome (opened; refused by policy, address or cap, or unreachable; cut at the byte cap).", []string{"outcome"}, nil)
	return reg.Register(&egressCollector{
		c:         p.Counters,
		opened:    tunnels,
		bytesDesc: prometheus.NewDesc("aster_egress_bytes_total", "Bytes relayed through egress tunnels, by direction (in: to sandboxes).", []string{"direction"}, nil),
		byHost: prometheus.NewDesc("aster_egress_host_tunnels_total", "Egress tunnels by allow-list host (\"other\": a name not on the list) and outcome (opened; cut; refused: not allowed, private address not admitted for this host, not a host name, connection cap, run ended; unreachable; credential rejected upstream, per request).",
			[]string{"host", "outcome"}, nil),
	})
}

func (e *egressCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- e.opened
	ch <- e.bytesDesc
	ch <- e.byHost
}

func (e *egressCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(e.opened, prometheus.CounterValue, float64(e.c.Opened.Load()), "opened")
	ch <- prometheus.MustNewConstMetric(e.opened, prometheus.CounterValue, float64(e.c.Refused.Load()), "refused")
	ch <- prometheus.MustNewConstMetric(e.opened, prometheus.CounterValue, float64(e.c.Cut.Load()), "cut")
	ch <- prometheus.MustNewConstMetric(e.bytesDesc, prometheus.CounterValue, float64(e.c.BytesIn.Load()), "in")
	ch <- prometheus.MustNewConstMetric(e.bytesDesc, prometheus.CounterValue, float64(e.c.BytesOut.Load()), "out")
	for k, n := range e.c.ByHost() {
		ch <- prometheus.MustNewConstMetric(e.byHost, prometheus.CounterValue, float64(n), k.Host, k.Outcome)
	}
}

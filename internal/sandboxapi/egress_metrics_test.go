package sandboxapi

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asterhq/aster/internal/egress"
)

// The per-host tunnel counts are exported with bounded labels: a name off
// the allow list is "other", whatever the job asked for.
func TestEgressHostMetrics(t *testing.T) {
	pol := &egress.Policy{Allow: []egress.Rule{{Host: "registry.example", Port: 443}}, Counters: &egress.Counters{}}
	run := pol.NewRun("t")
	for _, h := range []string{"evil-1.example", "evil-2.example", "10.0.0.1"} {
		if _, err := run.DialEgress(t.Context(), h, 443); err == nil {
			t.Fatalf("%s: dialled", h)
		}
	}
	reg := prometheus.NewRegistry()
	if err := RegisterEgressMetrics(reg, pol); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "aster_egress_host_tunnels_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["host"]+" "+labels["outcome"]] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"other " + egress.KindNotAllowed: 2, "other " + egress.KindInvalidHost: 1}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
}

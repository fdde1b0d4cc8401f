package app

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/health"
)

// wantMetrics checks each series of want in the scraped m, reporting every mismatch.
func wantMetrics(t *testing.T, m, want map[string]float64) {
	t.Helper()
	for key, w := range want {
		if got, ok := m[key]; !ok || got != w {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, w)
		}
	}
}

// scrape reads the App's /metrics as name{labels} → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// After a review the App's metrics show the queue (depth, wait, jobs by state and attempt),
// the model's tokens and cost, and the analyzer runs; /healthz has every server's shape.
func TestMetricsAfterAReview(t *testing.T) {
	rv := &scripted{}
	metrics := NewMetrics()
	h := newHarness(t, harnessOptions{reviewer: rv, metrics: metrics})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "one", map[string]string{"main.go": baseMain + "\n// TODO one\n"})
	h.push("d-open", "opened", 7, base, head, "")
	h.waitHistory(7, 1, 20*time.Second)
	wantMetrics(t, scrape(t, h.url), map[string]float64{
		"aster_app_model_tokens_total{kind=input}":  1000,
		"aster_app_model_tokens_total{kind=output}": 100,
		"aster_app_model_cost_usd_total":            0.01,
		"aster_app_queue_wait_seconds_count":        1,
		"aster_app_queue_depth":                     0,
		"aster_app_reviews_total{outcome=posted}":   1,
	})

	// A review that is running shows as a running job at attempt 1.
	block := make(chan struct{})
	rv.mu.Lock()
	rv.block = block
	rv.mu.Unlock()
	head2 := h.git.Commit(base, "two", map[string]string{"main.go": baseMain + "\n// TODO two\n"})
	h.push("d-open-8", "opened", 8, base, head2, "")
	deadline := time.Now().Add(20 * time.Second)
	for scrape(t, h.url)["aster_app_jobs{attempt=1,state=running}"] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no running job in the metrics: %v", scrape(t, h.url))
		}
		select {
		case <-t.Context().Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(block)
	h.waitHistory(8, 1, 20*time.Second)

	// The analyzers' runs, as the gate reports them (the scripted reviewer has no gate).
	metrics.ObserveAnalyzer(gate.Event{Analyzer: "shellcheck"})
	metrics.ObserveAnalyzer(gate.Event{Analyzer: "shellcheck", Done: true, Result: gate.AnalyzerResult{Status: gate.StatusOK, DurationMS: 1500}})
	metrics.ObserveAnalyzer(gate.Event{Analyzer: "semgrep", Done: true, Result: gate.AnalyzerResult{Status: gate.StatusTimeout, DurationMS: 60000}})
	wantMetrics(t, scrape(t, h.url), map[string]float64{
		"aster_analyzer_runs_total{status=ok}":                      1,
		"aster_analyzer_runs_total{status=timeout}":                 1,
		"aster_analyzer_runs_total{status=failed}":                  0,
		"aster_analyzer_run_duration_seconds{status=ok}_count":      1,
		"aster_analyzer_run_duration_seconds{status=timeout}_count": 1,
		"aster_app_model_tokens_total{kind=input}":                  2000,
	})

	resp, err := http.Get(h.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != health.Body || resp.Header.Get("Content-Type") != health.ContentType {
		t.Errorf("healthz %q (%s), want %q", body, resp.Header.Get("Content-Type"), health.Body)
	}
}

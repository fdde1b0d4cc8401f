package app

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/store"
)

// opsMetrics are what an operator watches besides deliveries and outcomes: the queue, the
// analyzers, the model's spend.
type opsMetrics struct {
	queueWait        prometheus.Histogram
	modelTokens      *prometheus.CounterVec
	modelCost        prometheus.Counter
	analyzerRuns     *prometheus.CounterVec
	analyzerDuration *prometheus.HistogramVec
}

func newOpsMetrics(reg *prometheus.Registry) opsMetrics {
	m := opsMetrics{
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "aster_app_queue_wait_seconds",
			Help:    "How long a review job waited between becoming runnable (queued, or its retry due) and a worker starting it.",
			Buckets: []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600},
		}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aster_app_model_tokens_total", Help: "Model tokens spent by finished reviews, by kind (input, output).",
		}, []string{"kind"}),
		modelCost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aster_app_model_cost_usd_total", Help: "Model cost of finished reviews, in US dollars (from the configured prices).",
		}),
		analyzerRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aster_analyzer_runs_total", Help: "Analyzer runs finished, by status (ok, failed, timeout, skipped, error).",
		}, []string{"status"}),
		analyzerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "aster_analyzer_run_duration_seconds",
			Help:    "Wall time of one analyzer run in its sandbox, by status.",
			Buckets: []float64{0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300},
		}, []string{"status"}),
	}
	for _, k := range []string{"input", "output"} {
		m.modelTokens.WithLabelValues(k)
	}
	for _, s := range []gate.Status{gate.StatusOK, gate.StatusFailed, gate.StatusTimeout, gate.StatusSkipped, gate.StatusError} {
		m.analyzerRuns.WithLabelValues(string(s))
	}
	reg.MustRegister(m.queueWait, m.modelTokens, m.modelCost, m.analyzerRuns, m.analyzerDuration)
	return m
}

// ObserveAnalyzer counts a finished analyzer run; give it to gate.RunnerOptions.Progress.
// The analyzer's name is not a label: repositories name their own analyzers.
func (m *Metrics) ObserveAnalyzer(ev gate.Event) {
	if !ev.Done {
		return
	}
	st := string(ev.Result.Status)
	m.ops.analyzerRuns.WithLabelValues(st).Inc()
	m.ops.analyzerDuration.WithLabelValues(st).Observe(float64(ev.Result.DurationMS) / 1000)
}

// reviewFinished counts a finished review: its outcome and its model spend.
func (m *Metrics) reviewFinished(rec *store.ReviewRecord) {
	m.reviews.WithLabelValues(rec.Outcome).Inc()
	m.ops.modelTokens.WithLabelValues("input").Add(float64(max(rec.InputTokens, 0)))
	m.ops.modelTokens.WithLabelValues("output").Add(float64(max(rec.OutputTokens, 0)))
	if rec.CostUSD > 0 {
		m.ops.modelCost.Add(rec.CostUSD)
	}
}

// jobStarted records how long the job waited for a worker.
func (m *Metrics) jobStarted(j *store.Job) {
	if j.Waited >= 0 {
		m.ops.queueWait.Observe(j.Waited.Seconds())
	}
}

// jobCollector reports the unfinished jobs at each scrape, from the database (so every
// replica reports the shared queue): how many wait, and how many are in each state at each
// attempt.
type jobCollector struct {
	st    *store.Store
	depth *prometheus.Desc
	jobs  *prometheus.Desc
}

func (m *Metrics) watchStore(st *store.Store) {
	m.reg.MustRegister(&jobCollector{st: st,
		depth: prometheus.NewDesc("aster_app_queue_depth", "Review jobs waiting to run: queued, or waiting for their retry.", nil, nil),
		jobs: prometheus.NewDesc("aster_app_jobs", "Unfinished review jobs by state (available, scheduled, retryable, running) and attempt.",
			[]string{"state", "attempt"}, nil),
	})
}

func (c *jobCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.jobs
}

func (c *jobCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stats, err := c.st.JobStats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.depth, err)
		return
	}
	waiting := 0
	for state, byAttempt := range stats {
		for attempt, n := range byAttempt {
			if state != "running" {
				waiting += n
			}
			ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(n), state, strconv.Itoa(attempt))
		}
	}
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(waiting))
}

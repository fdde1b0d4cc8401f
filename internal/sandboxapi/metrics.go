package sandboxapi

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/asterhq/aster/internal/sandbox"
)

// Metrics are the orchestrator's Prometheus metrics. It implements
// sandbox.Observer: give it to the Manager (ManagerOptions.Observer) and to
// the server (Options.Metrics). It has its own registry: nothing global.
type Metrics struct {
	reg             *prometheus.Registry
	runs            *prometheus.CounterVec
	runDuration     *prometheus.HistogramVec
	queueDepth      prometheus.Gauge
	running         prometheus.Gauge
	maxConcurrent   prometheus.Gauge
	queueSize       prometheus.Gauge
	rejected        *prometheus.CounterVec
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	engineUp        prometheus.Gauge
	phases          *prometheus.HistogramVec
	sessionsLive    prometheus.Gauge
	sessionsPaused  prometheus.Gauge
	sessionsEnded   *prometheus.CounterVec
	sessionLife     prometheus.Histogram
	sessionExec     *prometheus.HistogramVec

	mu     sync.Mutex
	avgRun float64 // exponentially weighted mean run time, seconds
	tap    func(runtime, phase string, d time.Duration)
}

var (
	_ sandbox.Observer         = (*Metrics)(nil)
	_ sandbox.PhaseObserver    = (*Metrics)(nil)
	_ sandbox.SessionObserver  = (*Metrics)(nil)
	_ sandbox.TeardownObserver = (*Metrics)(nil)
)

// sessionEndReasons are the reasons a session ends (sandbox.Sandbox.EndReason).
var sessionEndReasons = []string{"deleted", "ttl", "idle", "sandbox ended"}

// sandboxPhases are the phases of a run the phase histogram keeps (sandbox.Result.Timings,
// the removal of a sandbox after its answer, and the writing of the answer); any other
// name a runtime records is left out, so the label set stays bounded.
var sandboxPhases = map[string]bool{"admission": true, "queue": true, "prepare": true, "create": true, "start": true,
	"init": true, "job": true, "result": true, "remove": true, "total": true, "warm": true}

// gauge is a gauge with no labels.
func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// NewMetrics returns the metrics with the Go runtime and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aster_sandbox_runs_total", Help: "Sandbox runs finished, by status.",
		}, []string{"status"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "aster_sandbox_run_duration_seconds",
			Help:    "Wall time of a run from admission to result (prepare, job, teardown), by status.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600},
		}, []string{"status"}),
		queueDepth:    gauge("aster_sandbox_queue_depth", "Runs waiting for a sandbox slot."),
		running:       gauge("aster_sandbox_running", "Runs holding a sandbox slot."),
		maxConcurrent: gauge("aster_sandbox_max_concurrent", "Sandbox slots (--max-concurrent)."),
		queueSize:     gauge("aster_sandbox_queue_size", "Places in the admission queue (--queue)."),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aster_sandbox_rejected_total",
			Help: "Runs refused by admission control with 429, by reason (queue_full, queue_timeout, uploads_full, client_uploads, spool_full, bodies_full).",
		}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aster_api_requests_total", Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "code"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "aster_api_request_duration_seconds",
			Help:    "HTTP request latency, by route.",
			Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}, []string{"route"}),
		engineUp: gauge("aster_engine_up", "1 when the last check reached the container engine, else 0."),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "aster_sandbox_phase_seconds",
			Help: "Where a run's time went, by runtime and phase: admission (reading and checking the request), queue (waiting for a slot), " +
				"prepare (create + start + init), create, start, init (aster-init's hello), job, result (writing the answer), " +
				"remove (teardown, also when it runs after the answer), total; warm is how long a pooled sandbox waited for its run.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"runtime", "phase"}),
		sessionsLive:   gauge("aster_sessions_live", "Sessions alive now (paused ones included)."),
		sessionsPaused: gauge("aster_sessions_paused", "Sessions paused now."),
		sessionsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aster_sessions_ended_total", Help: "Sessions ended, by reason: deleted, ttl, idle, sandbox ended.",
		}, []string{"reason"}),
		sessionLife: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "aster_session_life_seconds", Help: "How long an ended session lived.",
			Buckets: []float64{1, 10, 60, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600},
		}),
		sessionExec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "aster_session_exec_seconds",
			Help:    "Time of one exec in a session (a file operation is one too), by status.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"status"}),
		avgRun: 1,
	}
	m.reg.MustRegister(m.runs, m.runDuration, m.queueDepth, m.running, m.maxConcurrent, m.queueSize,
		m.rejected, m.requests, m.requestDuration, m.engineUp, m.phases,
		m.sessionsLive, m.sessionsPaused, m.sessionsEnded, m.sessionLife, m.sessionExec,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range sandbox.Statuses {
		m.runs.WithLabelValues(string(s))
	}
	for _, r := range []string{"queue_full", "queue_timeout", "uploads_full", "client_uploads", "spool_full", "bodies_full"} {
		m.rejected.WithLabelValues(r)
	}
	for _, r := range sessionEndReasons {
		m.sessionsEnded.WithLabelValues(r)
	}
	return m
}

// SessionOpened implements sandbox.SessionObserver.
func (m *Metrics) SessionOpened() { m.sessionsLive.Inc() }

// SessionEnded implements sandbox.SessionObserver.
func (m *Metrics) SessionEnded(reason string, life time.Duration) {
	m.sessionsLive.Dec()
	if !slices.Contains(sessionEndReasons, reason) {
		reason = "sandbox ended"
	}
	m.sessionsEnded.WithLabelValues(reason).Inc()
	m.sessionLife.Observe(life.Seconds())
}

// SessionPaused implements sandbox.SessionObserver.
func (m *Metrics) SessionPaused(paused bool) {
	if paused {
		m.sessionsPaused.Inc()
	} else {
		m.sessionsPaused.Dec()
	}
}

// SessionExec implements sandbox.SessionObserver.
func (m *Metrics) SessionExec(status sandbox.Status, d time.Duration) {
	m.sessionExec.WithLabelValues(string(status)).Observe(d.Seconds())
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry returns the registry, for callers that add their own metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RunStarted implements sandbox.Observer.
func (m *Metrics) RunStarted() {}

// RunFinished implements sandbox.Observer.
func (m *Metrics) RunFinished(status sandbox.Status, d time.Duration) {
	m.runs.WithLabelValues(string(status)).Inc()
	m.runDuration.WithLabelValues(string(status)).Observe(d.Seconds())
	m.mu.Lock()
	m.avgRun = 0.8*m.avgRun + 0.2*d.Seconds()
	m.mu.Unlock()
}

// Rejected implements sandbox.Observer.
func (m *Metrics) Rejected(reason string) { m.rejected.WithLabelValues(reason).Inc() }

// RunPhases implements sandbox.PhaseObserver.
func (m *Metrics) RunPhases(runtime string, timings map[string]time.Duration) {
	for phase, d := range timings {
		m.observePhase(runtime, phase, d)
	}
}

// RunTeardown implements sandbox.TeardownObserver: a removal after the answer is the
// remove phase too.
func (m *Metrics) RunTeardown(runtime string, d time.Duration) { m.observePhase(runtime, "remove", d) }

// Tap has f called with every phase the histogram observes, at full precision (the
// benchmark's per-phase percentiles). f must be cheap and safe for concurrent use; nil
// removes it.
func (m *Metrics) Tap(f func(runtime, phase string, d time.Duration)) {
	m.mu.Lock()
	m.tap = f
	m.mu.Unlock()
}

func (m *Metrics) observePhase(runtime, phase string, d time.Duration) {
	if !sandboxPhases[phase] {
		return
	}
	m.phases.WithLabelValues(runtime, phase).Observe(d.Seconds())
	m.mu.Lock()
	tap := m.tap
	m.mu.Unlock()
	if tap != nil {
		tap(runtime, phase, d)
	}
}

// QueueDepth implements sandbox.Observer.
func (m *Metrics) QueueDepth(n int) { m.queueDepth.Set(float64(n)) }

// Running implements sandbox.Observer.
func (m *Metrics) Running(n int) { m.running.Set(float64(n)) }

// SetCapacity records the Manager's slots and queue places, for a caller that serves the
// metrics without a Server (aster mcp --http).
func (m *Metrics) SetCapacity(st sandbox.Stats) { m.setCapacity(st) }

func (m *Metrics) setCapacity(st sandbox.Stats) {
	m.maxConcurrent.Set(float64(st.MaxConcurrent))
	m.queueSize.Set(float64(st.QueueSize))
}

func (m *Metrics) setEngineUp(up bool) {
	v := 0.0
	if up {
		v = 1
	}
	m.engineUp.Set(v)
}

func (m *Metrics) observeRequest(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.requestDuration.WithLabelValues(route).Observe(d.Seconds())
}

// retryAfter estimates, in whole seconds, when a refused run would find a
// slot: the runs ahead of it, spread over the slots, times the recent mean
// run time. At least 1, at most 60.
func (m *Metrics) retryAfter(st sandbox.Stats) int {
	m.mu.Lock()
	avg := m.avgRun
	m.mu.Unlock()
	slots := max(st.MaxConcurrent, 1)
	waves := float64(st.Queued+st.Running-slots+1)/float64(slots) + 1
	secs := int(math.Ceil(max(waves, 1) * avg))
	return min(max(secs, 1), 60)
}

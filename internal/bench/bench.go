// Package bench is Aster's performance harness: in one run it measures the
// same jobs on bare `crun run`, `docker run --rm`, and Aster's docker and oci
// runtimes, cold and warm, through the HTTP API; prints a table; writes it as
// JSON with the machine it ran on; and checks the targets of issue 8. It also
// holds the concurrency test (hundreds of sleeping sandboxes at once, with the
// orchestrator's own memory measured). `aster bench` is its command line.
package bench

import (
	"context"
	"io"
	"slices"
	"sync"
	"time"
)

// Job is one workload every system runs.
type Job struct {
	Name string
	Argv []string
}

// DefaultJobs are the trivial job and the small real one of issue 8.
func DefaultJobs() []Job {
	return []Job{
		{Name: "true", Argv: []string{"true"}},
		{Name: "python", Argv: []string{"python3", "-c", "print('hello from python')"}},
	}
}

// Config is one harness run.
type Config struct {
	// Systems to measure, by name (see SystemNames); empty means all.
	Systems []string
	Jobs    []Job
	// Concurrency levels; each is measured as a closed loop of that many
	// clients for Duration (at least MinRequests requests).
	Concurrency []int
	Duration    time.Duration
	MinRequests int
	// PacedRounds is how many rounds of warm-latency measurement each warm
	// system gets at concurrency 1 and 2 (fewer, of more requests each, at
	// higher concurrency): wait until the pool is full, then send as many
	// requests as the concurrency at once.
	PacedRounds int
	// Warm is the pool size of the warm systems (at least the largest
	// concurrency, so a paced round is all hits).
	Warm int
	// Pairs is how many alternating runs of aster-oci-cold and bare-crun
	// the ratio target is measured on (0: none; the c=1 cells are used).
	Pairs int
	// Progress receives one line per measured cell; nil is silent.
	Progress io.Writer
}

// Cell is the measurement of one system running one job at one concurrency.
type Cell struct {
	System      string  `json:"system"`
	Job         string  `json:"job"`
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	P50MS       float64 `json:"p50_ms"`
	P95MS       float64 `json:"p95_ms"`
	P99MS       float64 `json:"p99_ms"`
	MeanMS      float64 `json:"mean_ms"`
	// ThroughputRPS is successful runs per second of the closed loop.
	ThroughputRPS float64 `json:"throughput_rps"`
	// WarmHitRate is the share of closed-loop runs served by a warm sandbox
	// (warm systems only).
	WarmHitRate *float64 `json:"warm_hit_rate,omitempty"`
	// Paced* are the warm-latency rounds (warm systems only).
	PacedRequests int      `json:"paced_requests,omitempty"`
	PacedP50MS    *float64 `json:"paced_p50_ms,omitempty"`
	PacedP99MS    *float64 `json:"paced_p99_ms,omitempty"`
	PacedHitRate  *float64 `json:"paced_hit_rate,omitempty"`
	Slowest       *Slowest `json:"slowest,omitempty"`
	// Phases are the percentiles of each phase the server observed during the cell's
	// closed loop (admission, queue, prepare, create, start, init, job, result, remove,
	// total; warm on a pooled system), from its /metrics histograms' own observations at
	// full precision, for Aster's systems. The removals after the answers are waited for.
	Phases map[string]PhaseStats `json:"phases,omitempty"`
}

// PhaseStats are one phase's percentiles in milliseconds.
type PhaseStats struct {
	N     int     `json:"n"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
}

// sample is one request's outcome.
type sample struct {
	d    time.Duration
	warm bool
	err  error
	// timings are the server's own, when the system reports them.
	timings map[string]int64
}

// Slowest is the slowest successful request of a cell, with where the server
// says its time went: the first thing to look at when a p99 is odd.
type Slowest struct {
	MS        float64          `json:"ms"`
	Warm      bool             `json:"warm"`
	TimingsMS map[string]int64 `json:"timings_ms,omitempty"`
}

// system is one way of running a job.
type system interface {
	Name() string
	// Run runs the job once and returns the latency it measured (the
	// system decides what is inside: a bundle written beforehand is not).
	Run(ctx context.Context, job Job) sample
	Close() error
}

// warmSystem is a system that may have a pool that paced rounds can wait for.
type warmSystem interface {
	system
	WaitWarm(ctx context.Context) error
	// Pooled says whether the system keeps warm sandboxes at all.
	Pooled() bool
}

func asWarm(sys system) (warmSystem, bool) {
	ws, ok := sys.(warmSystem)
	if !ok || !ws.Pooled() {
		return nil, false
	}
	return ws, true
}

// measure runs the closed loop and, for warm systems, the paced rounds.
func measure(ctx context.Context, sys system, job Job, conc int, cfg Config) Cell {
	cell := Cell{System: sys.Name(), Job: job.Name, Concurrency: conc}
	// Warm-up, not counted: first-use costs (connections, page cache).
	for range min(conc, 2) {
		sys.Run(ctx, job)
	}
	if ws, ok := asWarm(sys); ok {
		_ = ws.WaitWarm(ctx)
	}
	tapped, hasTap := sys.(interface{ tap() *phaseTap })
	if hasTap {
		if q, ok := sys.(interface{ quiesce(context.Context) }); ok {
			q.quiesce(ctx) // the warm-up's teardown is not the cell's
		}
		tapped.tap().take()
	}
	var mu sync.Mutex
	var samples []sample
	start := time.Now()
	stopAt := start.Add(cfg.Duration)
	var started int
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mu.Lock()
				if time.Now().After(stopAt) && started >= cfg.MinRequests {
					mu.Unlock()
					return
				}
				started++
				mu.Unlock()
				s := sys.Run(ctx, job)
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	fill(&cell, samples, elapsed)
	if hasTap {
		// The server's own observations, at full precision, with what no answer carries:
		// the writing of the answer and the removal after it. Wait for those removals.
		if q, ok := sys.(interface{ quiesce(context.Context) }); ok {
			q.quiesce(ctx)
		}
		// The slots can be free before the last removal is observed: wait for
		// one removal per run (bounded), not only for the slots.
		tap := tapped.tap()
		for wait := time.Now().Add(30 * time.Second); tap.count("remove") < len(samples) && time.Now().Before(wait) && ctx.Err() == nil; {
			time.Sleep(time.Millisecond)
		}
		cell.Phases = phaseStats(tap.take())
	}
	if ws, ok := asWarm(sys); ok {
		hits := 0
		for _, s := range samples {
			if s.warm {
				hits++
			}
		}
		rate := ratio(hits, len(samples))
		cell.WarmHitRate = &rate
		paced(ctx, ws, job, conc, cfg, &cell)
	}
	return cell
}

// paced measures warm latency: each round waits for a full pool and sends
// conc requests at once.
func paced(ctx context.Context, ws warmSystem, job Job, conc int, cfg Config, cell *Cell) {
	var samples []sample
	// About 2×PacedRounds samples per cell, in at least two rounds: a round
	// at high concurrency means refilling a whole pool, which is slow on Docker.
	rounds := min(cfg.PacedRounds, max(2, (2*cfg.PacedRounds+conc-1)/conc))
	for range rounds {
		if err := ws.WaitWarm(ctx); err != nil {
			break
		}
		out := make([]sample, conc)
		var wg sync.WaitGroup
		for i := range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i] = ws.Run(ctx, job)
			}()
		}
		wg.Wait()
		samples = append(samples, out...)
	}
	var ok []time.Duration
	hits := 0
	for _, s := range samples {
		if s.err == nil {
			ok = append(ok, s.d)
		}
		if s.warm {
			hits++
		}
	}
	cell.PacedRequests = len(samples)
	if len(ok) > 0 {
		p50, p99 := ms(percentile(ok, 50)), ms(percentile(ok, 99))
		rate := ratio(hits, len(samples))
		cell.PacedP50MS, cell.PacedP99MS, cell.PacedHitRate = &p50, &p99, &rate
	}
}

func fill(cell *Cell, samples []sample, elapsed time.Duration) {
	var ok []time.Duration
	var sum time.Duration
	phases := map[string][]time.Duration{}
	for _, s := range samples {
		if s.err != nil {
			cell.Errors++
			if cell.FirstError == "" {
				cell.FirstError = s.err.Error()
			}
			continue
		}
		ok = append(ok, s.d)
		sum += s.d
		for phase, v := range s.timings {
			phases[phase] = append(phases[phase], time.Duration(v)*time.Millisecond)
		}
		if cell.Slowest == nil || ms(s.d) > cell.Slowest.MS {
			cell.Slowest = &Slowest{MS: ms(s.d), Warm: s.warm, TimingsMS: s.timings}
		}
	}
	cell.Requests = len(samples)
	if len(ok) == 0 {
		return
	}
	cell.P50MS = ms(percentile(ok, 50))
	cell.P95MS = ms(percentile(ok, 95))
	cell.P99MS = ms(percentile(ok, 99))
	cell.Phases = phaseStats(phases)
	cell.MeanMS = ms(sum / time.Duration(len(ok)))
	cell.ThroughputRPS = round2(float64(len(ok)) / elapsed.Seconds())
}

// phaseStats are the percentiles of each phase's durations (nil when there are none).
func phaseStats(phases map[string][]time.Duration) map[string]PhaseStats {
	var out map[string]PhaseStats
	for phase, ds := range phases {
		if len(ds) == 0 {
			continue
		}
		if out == nil {
			out = map[string]PhaseStats{}
		}
		out[phase] = PhaseStats{N: len(ds), P50MS: ms(percentile(ds, 50)), P95MS: ms(percentile(ds, 95)), P99MS: ms(percentile(ds, 99))}
	}
	return out
}

// percentile is the nearest-rank percentile.
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100
	return s[max(rank-1, 0)]
}

func ms(d time.Duration) float64 { return round2(float64(d) / float64(time.Millisecond)) }

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return round2(float64(a) / float64(b))
}

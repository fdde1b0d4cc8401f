package bench

import (
	"context"
	"fmt"
	"time"
)

// Pair compares two systems on the same job by alternating single runs of
// each, so that whatever else loads the machine weighs on both alike: the
// fair way to state a ratio on a shared, noisy host.
type Pair struct {
	System    string  `json:"system"`   // A
	Base      string  `json:"baseline"` // B
	Job       string  `json:"job"`
	N         int     `json:"pairs"`
	Errors    int     `json:"errors"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	BaseP50MS float64 `json:"baseline_p50_ms"`
	BaseP99MS float64 `json:"baseline_p99_ms"`
	// Ratio is P50MS / BaseP50MS.
	Ratio float64 `json:"ratio"`
	// UntilGoneP50MS is A's p50 from request to its sandbox fully destroyed
	// (Aster answers first and destroys in the background; the runtime
	// binary alone returns only after its teardown), and UntilGoneRatio that
	// over BaseP50MS: the stricter comparison.
	UntilGoneP50MS float64 `json:"until_gone_p50_ms,omitempty"`
	UntilGoneRatio float64 `json:"until_gone_ratio,omitempty"`
}

// pair runs n alternating runs of a and b (b first), each after the previous
// one's background work has settled.
func pair(ctx context.Context, a, b system, job Job, n int) Pair {
	p := Pair{System: a.Name(), Base: b.Name(), Job: job.Name, N: n}
	settle := func(s system) {
		if q, ok := s.(interface{ quiesce(context.Context) }); ok {
			q.quiesce(ctx)
		}
	}
	// Warm-up, not counted.
	b.Run(ctx, job)
	a.Run(ctx, job)
	var da, db, gone []time.Duration
	for range n {
		if ctx.Err() != nil {
			break
		}
		settle(a)
		if s := b.Run(ctx, job); s.err == nil {
			db = append(db, s.d)
		} else {
			p.Errors++
		}
		settle(a)
		t0 := time.Now()
		if s := a.Run(ctx, job); s.err == nil {
			da = append(da, s.d)
			settle(a)
			gone = append(gone, time.Since(t0))
		} else {
			p.Errors++
		}
	}
	if len(da) == 0 || len(db) == 0 {
		return p
	}
	p.P50MS, p.P99MS = ms(percentile(da, 50)), ms(percentile(da, 99))
	p.BaseP50MS, p.BaseP99MS = ms(percentile(db, 50)), ms(percentile(db, 99))
	if p.BaseP50MS > 0 {
		p.Ratio = round2(p.P50MS / p.BaseP50MS)
		if len(gone) > 0 {
			p.UntilGoneP50MS = ms(percentile(gone, 50))
			p.UntilGoneRatio = round2(p.UntilGoneP50MS / p.BaseP50MS)
		}
	}
	return p
}

func (p Pair) String() string {
	return fmt.Sprintf("%s vs %s, %s, %d alternating pairs: p50 %.2fms vs %.2fms (×%.2f), p99 %.2fms vs %.2fms; until the sandbox is gone p50 %.2fms (×%.2f)",
		p.System, p.Base, p.Job, p.N, p.P50MS, p.BaseP50MS, p.Ratio, p.P99MS, p.BaseP99MS, p.UntilGoneP50MS, p.UntilGoneRatio)
}

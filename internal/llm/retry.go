package llm

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// parseRetryAfter reads how long the server asked us to wait: retry-after-ms
// (OpenAI and Anthropic send it), then Retry-After as seconds or an HTTP date.
// ok is false when neither header holds a usable value.
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) && !math.IsNaN(ms) {
			return clampDuration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsNaN(s) || math.IsInf(s, -1) {
			return 0, false
		}
		return clampDuration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func clampDuration(f float64) time.Duration {
	if f >= float64(math.MaxInt64) || math.IsInf(f, 1) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f)
}

// backoff is the wait before retry n (0-based) when the server named none:
// exponential from base, capped at max, with "equal jitter" (half fixed, half
// random) so many reviewers hitting one rate limit spread out.
func backoff(n int, base, max time.Duration, rnd func() float64) time.Duration {
	if base <= 0 {
		return 0
	}
	d := float64(base) * math.Pow(2, float64(n))
	if max > 0 && d > float64(max) {
		d = float64(max)
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	return time.Duration(d/2 + rnd()*d/2)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Package backoff is the waiting shared by Aster's two HTTP clients that retry (GitHub and
// the model providers): an exponential delay with jitter, a wait the server asked for in its
// headers, and a sleep that a context ends.
package backoff

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Delay is the wait before retry n (0-based) when the server named none: base doubled n
// times, capped at max (when max > 0), with "equal jitter" — half of it fixed, half random —
// so that many clients refused by one rate limit spread out. A base of zero or less means no
// wait. rnd returns a number in [0, 1); nil uses math/rand.
func Delay(n int, base, max time.Duration, rnd func() float64) time.Duration {
	if base <= 0 {
		return 0
	}
	d := float64(base) * math.Pow(2, float64(max0(n)))
	if max > 0 && d > float64(max) {
		d = float64(max)
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	return clamp(d/2 + rnd()*d/2)
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// RetryAfter reads how long the server asked the client to wait: Retry-After-Ms (the model
// providers send it), then Retry-After as seconds (fractions allowed) or as an HTTP date,
// which counts from now. ok is false when no header holds a usable value; a date in the past
// is a wait of zero.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsNaN(ms) {
			return clamp(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsNaN(s) {
			return 0, false
		}
		return clamp(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// clamp turns a float number of nanoseconds into a Duration, the largest one for anything
// larger (an "infinite" or absurd header value).
func clamp(f float64) time.Duration {
	if f >= float64(math.MaxInt64) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f)
}

// Sleep waits d or until ctx ends, whichever is first, and returns ctx's error if it ended.
// A wait of zero or less returns at once (with ctx's error, if any).
func Sleep(ctx context.Context, d time.Duration) error {
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

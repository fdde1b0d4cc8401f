package backoff

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{"nil", nil, 0, false},
		{"none", http.Header{}, 0, false},
		{"seconds", http.Header{"Retry-After": {"12"}}, 12 * time.Second, true},
		{"fractional", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{"zero", http.Header{"Retry-After": {"0"}}, 0, true},
		{"ms wins", http.Header{"Retry-After": {"12"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond, true},
		{"bad ms falls back", http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"soon"}}, 3 * time.Second, true},
		{"negative ms falls back", http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"-1"}}, 3 * time.Second, true},
		{"date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{"negative", http.Header{"Retry-After": {"-5"}}, 0, false},
		{"nan", http.Header{"Retry-After": {"NaN"}}, 0, false},
		{"garbage", http.Header{"Retry-After": {"later"}}, 0, false},
		{"huge", http.Header{"Retry-After": {"1e300"}}, time.Duration(1<<63 - 1), true},
		{"infinite", http.Header{"Retry-After": {"+Inf"}}, time.Duration(1<<63 - 1), true},
	}
	for _, c := range cases {
		got, ok := RetryAfter(c.h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: got %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestDelay(t *testing.T) {
	for n := range 10 {
		lo := Delay(n, time.Second, 8*time.Second, func() float64 { return 0 })
		hi := Delay(n, time.Second, 8*time.Second, func() float64 { return 1 })
		step := min(time.Second<<n, 8*time.Second)
		if lo != step/2 || hi != step {
			t.Errorf("n=%d: [%v, %v], want [%v, %v]", n, lo, hi, step/2, step)
		}
	}
	if d := Delay(3, 0, time.Second, nil); d != 0 {
		t.Errorf("zero base: %v", d)
	}
	if d := Delay(-1, time.Second, 0, func() float64 { return 1 }); d != time.Second {
		t.Errorf("negative n: %v, want the base", d)
	}
	// No cap and a very late retry: the largest duration, not an overflow to a negative one.
	if d := Delay(5000, time.Second, 0, func() float64 { return 1 }); d <= 0 {
		t.Errorf("uncapped late retry overflowed: %v", d)
	}
	for range 100 {
		if d := Delay(2, time.Second, time.Minute, nil); d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("real jitter out of [2s, 4s]: %v", d)
		}
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if err := Sleep(ctx, 0); err != nil {
		t.Errorf("zero wait on a live context: %v", err)
	}
	if err := Sleep(ctx, time.Millisecond); err != nil {
		t.Errorf("short wait: %v", err)
	}
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Errorf("ended context: %v, want context.Canceled", err)
	}
	if err := Sleep(ctx, 0); err != context.Canceled {
		t.Errorf("zero wait on an ended context: %v, want context.Canceled", err)
	}
}

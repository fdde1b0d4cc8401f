package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

// TestResolveLimits: the one resolution every surface uses — units read,
// defaults filled (and lowered to a ceiling), ceilings and bounds enforced
// with messages in human units naming limits.NAME.
func TestResolveLimits(t *testing.T) {
	t.Parallel()
	defaults := DefaultLimits()
	ceilings := sandbox.Limits{TimeoutMS: 600_000, MemoryBytes: 4 << 30, MilliCPUs: 2000, Pids: 1024,
		OutputBytes: 16 << 20, OutputCeilingBytes: 256 << 20, WorkdirBytes: 1 << 30, TmpBytes: 1 << 30}
	want := func(edit func(*sandbox.Limits)) sandbox.Limits {
		l := defaults
		edit(&l)
		return l
	}
	for _, c := range []struct {
		name     string
		req      LimitsConfig
		ceilings sandbox.Limits
		want     sandbox.Limits
	}{
		{"nothing asked", LimitsConfig{}, ceilings, defaults},
		{"every unit", LimitsConfig{Timeout: "5s", Memory: "256m", CPUs: "0.5", Pids: "64", OutputLimit: "2m",
			OutputCeiling: "8m", WorkdirSize: "1g", TmpSize: "100m"}, ceilings,
			sandbox.Limits{TimeoutMS: 5000, MemoryBytes: 256 << 20, MilliCPUs: 500, Pids: 64, OutputBytes: 2 << 20,
				OutputCeilingBytes: 8 << 20, WorkdirBytes: 1 << 30, TmpBytes: 100 << 20}},
		{"bare numbers: seconds and bytes", LimitsConfig{Timeout: "5", Memory: "268435456"}, ceilings,
			want(func(l *sandbox.Limits) { l.TimeoutMS, l.MemoryBytes = 5000, 256<<20 })},
		{"milliseconds", LimitsConfig{Timeout: "1500ms"}, ceilings, want(func(l *sandbox.Limits) { l.TimeoutMS = 1500 })},
		{"default lowered to the ceiling", LimitsConfig{}, sandbox.Limits{MemoryBytes: 256 << 20},
			want(func(l *sandbox.Limits) { l.MemoryBytes = 256 << 20 })},
	} {
		got, err := ResolveLimits(c.req, defaults, c.ceilings)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct {
		name string
		req  LimitsConfig
		want string
	}{
		{"over the ceiling, in human units", LimitsConfig{Memory: "99999999999"}, "invalid spec: limits.memory 93.1GiB is above this server's ceiling of 4GiB"},
		{"duration over the ceiling", LimitsConfig{Timeout: "1h"}, "limits.timeout 1h0m0s is above this server's ceiling of 10m0s"},
		{"cpus over the ceiling", LimitsConfig{CPUs: "2.5"}, "limits.cpus 2.5 is above this server's ceiling of 2"},
		{"under the minimum", LimitsConfig{Memory: "1m"}, "limits.memory 1MiB is out of range (16MiB to 64GiB)"},
		{"zero", LimitsConfig{Pids: "0"}, "limits.pids 0 is out of range (8 to 32768)"},
		{"negative duration names the range", LimitsConfig{Timeout: "-1"}, `limits.timeout: duration "-1" is negative (100ms to 6h0m0s)`},
		{"not a size", LimitsConfig{TmpSize: "lots"}, `limits.tmp_size: "lots" is not a size`},
		{"not a count", LimitsConfig{Pids: "1.5"}, `limits.pids: "1.5" is not a whole number (8 to 32768)`},
		{"under a millisecond", LimitsConfig{Timeout: "10us"}, `limits.timeout: duration "10us" is under 1ms`},
		{"ceiling below output", LimitsConfig{OutputLimit: "4m", OutputCeiling: "2m"}, "limits.output_ceiling 2MiB is below limits.output_limit 4MiB"},
	} {
		_, err := ResolveLimits(c.req, defaults, ceilings)
		var le *sandbox.LimitError
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a LimitError containing %q", c.name, err, c.want)
		}
	}
}

// TestResolveRaisesOutputCeiling: asking to keep more output than the
// default output_ceiling raises that ceiling (up to its own ceiling) rather
// than refusing a request that never mentioned it.
func TestResolveRaisesOutputCeiling(t *testing.T) {
	t.Parallel()
	defaults := DefaultLimits()
	defaults.OutputCeilingBytes = 4 << 20
	l, err := ResolveLimits(LimitsConfig{OutputLimit: "8m"}, defaults, sandbox.Limits{})
	if err != nil || l.OutputBytes != 8<<20 || l.OutputCeilingBytes != 8<<20 {
		t.Errorf("raised: %+v, %v; want both 8MiB", l, err)
	}
	_, err = ResolveLimits(LimitsConfig{OutputLimit: "8m"}, defaults, sandbox.Limits{OutputCeilingBytes: 6 << 20})
	if err == nil || !strings.Contains(err.Error(), "limits.output_ceiling 6MiB is below limits.output_limit 8MiB") {
		t.Errorf("raised past its ceiling: %v", err)
	}
}

// TestLimitsConfigParse: aster.yaml's limits are resolved the same way, with
// DefaultLimits for what the file leaves out.
func TestLimitsConfigParse(t *testing.T) {
	t.Parallel()
	l, err := LimitsConfig{Memory: "256m", CPUs: "0.5"}.Parse()
	want := DefaultLimits()
	want.MemoryBytes, want.MilliCPUs = 256<<20, 500
	if err != nil || l != want {
		t.Errorf("Parse: %+v, %v; want %+v", l, err, want)
	}
}

// FuzzResolveLimits: whatever text arrives, resolution never panics, and what
// it accepts lies within the bounds and the ceilings.
func FuzzResolveLimits(f *testing.F) {
	f.Add("5s", "256m", "0.5", "64", "1m")
	f.Add("-1", "99999999999", "1e400", "9223372036854775807", "NaN")
	f.Add("1e9", "8t", "0", "", "1.5g")
	ceilings := sandbox.Limits{TimeoutMS: 600_000, MemoryBytes: 4 << 30, MilliCPUs: 2000, Pids: 1024,
		OutputBytes: 16 << 20, OutputCeilingBytes: 256 << 20, WorkdirBytes: 1 << 30, TmpBytes: 1 << 30}
	f.Fuzz(func(t *testing.T, timeout, memory, cpus, pids, output string) {
		req := LimitsConfig{Timeout: timeout, Memory: memory, CPUs: cpus, Pids: pids, OutputLimit: output, WorkdirSize: memory}
		l, err := ResolveLimits(req, DefaultLimits(), ceilings)
		if err != nil {
			if !errors.Is(err, sandbox.ErrInvalidSpec) {
				t.Fatalf("error %v is not an ErrInvalidSpec", err)
			}
			return
		}
		if err := LimitBounds().Check(l); err != nil {
			t.Fatalf("accepted %+v out of bounds: %v", l, err)
		}
		if err := sandbox.CheckCeilings(l, ceilings); err != nil {
			t.Fatalf("accepted %+v over the ceilings: %v", l, err)
		}
	})
}

// Package units reads and writes the human units of Aster's settings and
// messages: sizes ("512m", "64MiB", "1.5g"), CPU counts ("0.5") and
// durations ("30s", "2m", a bare number of seconds). It is the one home of
// that parsing and formatting, used by the configuration, the sandbox's
// limits, the HTTP API and the MCP server alike; it imports nothing of Aster.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseBytes reads a size such as "512m", "64MiB", "1g", "1048576" or "1.5g".
// Suffixes are binary (k = 1024). Negative, fractional-byte or overflowing
// values are errors.
func ParseBytes(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := float64(1)
	for _, suf := range []struct {
		s string
		m float64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
	} {
		if strings.HasSuffix(s, suf.s) {
			mult = suf.m
			s = strings.TrimSpace(strings.TrimSuffix(s, suf.s))
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size (try 512m, 1g, 1048576)", orig)
	}
	if f < 0 {
		return 0, fmt.Errorf("size %q is negative", orig)
	}
	v := f * mult
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", orig)
	}
	return int64(v), nil
}

// FormatBytes renders a size for a person: exactly in the largest binary unit
// that divides it (512MiB, which ParseBytes reads back), else to one
// decimal in the largest unit it reaches (93.1GiB), with the exact count when
// the decimal would hide the difference (16.0GiB (17179869185B)).
func FormatBytes(v int64) string {
	units := []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}}
	for _, u := range units {
		if v >= 1<<u.shift && v%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", v>>u.shift, u.name)
		}
	}
	for _, u := range units {
		if v >= 1<<u.shift {
			s := strconv.FormatFloat(float64(v)/float64(int64(1)<<u.shift), 'f', 1, 64)
			if strings.HasSuffix(s, ".0") {
				return fmt.Sprintf("%s%s (%dB)", s, u.name, v)
			}
			return s + u.name
		}
	}
	return fmt.Sprintf("%dB", v)
}

// ParseCPUs reads a CPU count such as "1", "0.5" or "2" into milli-CPUs.
func ParseCPUs(s string) (int64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a CPU count (try 1 or 0.5)", s)
	}
	if f <= 0 {
		return 0, fmt.Errorf("cpus %q must be positive", s)
	}
	if f > 1e6 {
		return 0, fmt.Errorf("cpus %q is too large", s)
	}
	return int64(math.Round(f * 1000)), nil
}

// FormatDuration writes d as ParseDuration reads it, without trailing zero
// units: "1m", not "1m0s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	s, _ = strings.CutSuffix(s, "m0s")
	if len(s) < len(d.String()) {
		s += "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// ParseDuration reads a duration such as "30s", "2m" or "1500ms". A bare number
// is seconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		if n > 1e9 {
			return 0, fmt.Errorf("duration %q is out of range", s)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (try 30s, 2m, 1500ms)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

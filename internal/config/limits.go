// Package config holds Aster's typed configuration: every default in one place,
// parsing of human units ("512m", "30s", "1.5"), validation with messages a
// person can act on, and loading from aster.yaml and ASTER_* variables.
package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// Defaults for a sandbox run. Every one has a name and a unit.
const (
	DefaultImage              = "aster-sandbox:latest"
	DefaultTimeoutMS          = 30_000
	DefaultMemoryBytes        = 512 << 20
	DefaultMilliCPUs          = 1000
	DefaultPids               = 128
	DefaultOutputBytes        = 1 << 20
	DefaultOutputCeilingBytes = 64 << 20
	DefaultWorkdirBytes       = 256 << 20
	DefaultTmpBytes           = 64 << 20
)

// Defaults of one analyzer of the review gate, where its definition (built in
// or in .aster.yml) names no timeout or memory of its own.
const (
	DefaultAnalyzerTimeout = 2 * time.Minute
	DefaultAnalyzerMemory  = "1g"
)

// DefaultSnapshotReadBytes bounds what the review reads of a revision's
// archive in all, the files it keeps for the analyzers and the ones it skips:
// skipping a file still reads it, and a compressed archive of a few MiB can
// unpack to hundreds of GiB. A tree larger than this (the Linux kernel's is
// about 1.4 GiB) is reviewed on what was read.
const DefaultSnapshotReadBytes = 2 << 30

// Bounds beyond which a limit is absurd and rejected rather than clamped.
const (
	MinTimeoutMS          = 100
	MaxTimeoutMS          = 6 * 60 * 60 * 1000 // six hours
	MinMemoryBytes        = 16 << 20
	MaxMemoryBytes        = 64 << 30
	MinMilliCPUs          = 10
	MaxMilliCPUs          = 64_000
	MinPids               = 8
	MaxPids               = 32_768
	MinOutputBytes        = 1 << 10
	MaxOutputBytes        = 64 << 20
	MaxOutputCeilingBytes = 1 << 30
	MinTmpfsBytes         = 1 << 20
	MaxTmpfsBytes         = 16 << 30
)

// DefaultLimits returns the limits a run gets when it asks for nothing.
func DefaultLimits() sandbox.Limits {
	return sandbox.Limits{
		TimeoutMS:          DefaultTimeoutMS,
		MemoryBytes:        DefaultMemoryBytes,
		MilliCPUs:          DefaultMilliCPUs,
		Pids:               DefaultPids,
		OutputBytes:        DefaultOutputBytes,
		OutputCeilingBytes: DefaultOutputCeilingBytes,
		WorkdirBytes:       DefaultWorkdirBytes,
		TmpBytes:           DefaultTmpBytes,
	}
}

// LimitBounds returns the bounds beyond which a limit is absurd and rejected
// rather than clamped. Every Manager is built with them.
func LimitBounds() sandbox.Bounds {
	return sandbox.Bounds{
		Min: sandbox.Limits{
			TimeoutMS:          MinTimeoutMS,
			MemoryBytes:        MinMemoryBytes,
			MilliCPUs:          MinMilliCPUs,
			Pids:               MinPids,
			OutputBytes:        MinOutputBytes,
			OutputCeilingBytes: MinOutputBytes,
			WorkdirBytes:       MinTmpfsBytes,
			TmpBytes:           MinTmpfsBytes,
		},
		Max: sandbox.Limits{
			TimeoutMS:          MaxTimeoutMS,
			MemoryBytes:        MaxMemoryBytes,
			MilliCPUs:          MaxMilliCPUs,
			Pids:               MaxPids,
			OutputBytes:        MaxOutputBytes,
			OutputCeilingBytes: MaxOutputCeilingBytes,
			WorkdirBytes:       MaxTmpfsBytes,
			TmpBytes:           MaxTmpfsBytes,
		},
	}
}

// ValidateLimits rejects negative, zero or absurd limits with a message that
// names the field, the value and the allowed range (LimitBounds). It expects
// defaults applied.
func ValidateLimits(l sandbox.Limits) error { return LimitBounds().Check(l) }

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

// FormatBytes renders a size for a person, e.g. 512MiB (sandbox.FormatBytes).
func FormatBytes(v int64) string { return sandbox.FormatBytes(v) }

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

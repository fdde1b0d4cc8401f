// Package config holds Aster's typed configuration: every default in one place,
// parsing of human units ("512m", "30s", "1.5"), validation with messages a
// person can act on, and loading from aster.yaml and ASTER_* variables.
package config

import (
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

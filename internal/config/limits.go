// Package config holds Aster's typed configuration: loading from aster.yaml
// and ASTER_* variables, validation with messages a person can act on (human
// units such as "512m", "30s", "1.5" are read by internal/units), and
// composing each package's options from the defaults that package declares
// beside them (config imports the packages it configures, so the runtimes
// under internal/sandbox, github, llm and store import nothing of config).
package config

import (
	"github.com/asterhq/aster/internal/sandbox"
)

// Defaults for a sandbox run: the sandbox package's own (sandbox.DefaultLimits).
const (
	DefaultImage              = sandbox.DefaultImage
	DefaultTimeoutMS          = sandbox.DefaultTimeoutMS
	DefaultMemoryBytes        = sandbox.DefaultMemoryBytes
	DefaultMilliCPUs          = sandbox.DefaultMilliCPUs
	DefaultPids               = sandbox.DefaultPids
	DefaultOutputBytes        = sandbox.DefaultOutputBytes
	DefaultOutputCeilingBytes = sandbox.DefaultOutputCeilingBytes
	DefaultWorkdirBytes       = sandbox.DefaultWorkdirBytes
	DefaultTmpBytes           = sandbox.DefaultTmpBytes
)

// Bounds beyond which a limit is absurd and rejected rather than clamped: the
// sandbox package's own (sandbox.LimitBounds).
const (
	MinTimeoutMS          = sandbox.MinTimeoutMS
	MaxTimeoutMS          = sandbox.MaxTimeoutMS
	MinMemoryBytes        = sandbox.MinMemoryBytes
	MaxMemoryBytes        = sandbox.MaxMemoryBytes
	MinMilliCPUs          = sandbox.MinMilliCPUs
	MaxMilliCPUs          = sandbox.MaxMilliCPUs
	MinPids               = sandbox.MinPids
	MaxPids               = sandbox.MaxPids
	MinOutputBytes        = sandbox.MinOutputBytes
	MaxOutputBytes        = sandbox.MaxOutputBytes
	MaxOutputCeilingBytes = sandbox.MaxOutputCeilingBytes
	MinTmpfsBytes         = sandbox.MinTmpfsBytes
	MaxTmpfsBytes         = sandbox.MaxTmpfsBytes
)

// DefaultLimits returns the limits a run gets when it asks for nothing
// (sandbox.DefaultLimits).
func DefaultLimits() sandbox.Limits { return sandbox.DefaultLimits() }

// LimitBounds returns the bounds beyond which a limit is absurd and rejected
// rather than clamped (sandbox.LimitBounds). Every Manager is built with them.
func LimitBounds() sandbox.Bounds { return sandbox.LimitBounds() }

// ValidateLimits rejects negative, zero or absurd limits with a message that
// names the field, the value and the allowed range (LimitBounds). It expects
// defaults applied.
func ValidateLimits(l sandbox.Limits) error { return LimitBounds().Check(l) }

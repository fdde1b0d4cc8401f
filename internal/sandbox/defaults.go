package sandbox

// Defaults and bounds of a sandbox run. They are the sandbox's own: the
// runtimes and their tests read them here, and internal/config composes the
// operator's settings from them (config.DefaultLimits is DefaultLimits).

// DefaultImage is the image a run uses when neither the spec nor the operator
// names one.
const DefaultImage = "aster-sandbox:latest"

// Defaults for a sandbox run. Every one has a name and a unit.
const (
	DefaultTimeoutMS          = 30_000
	DefaultMemoryBytes        = 512 << 20
	DefaultMilliCPUs          = 1000
	DefaultPids               = 128
	DefaultOutputBytes        = 1 << 20
	DefaultOutputCeilingBytes = 64 << 20
	DefaultWorkdirBytes       = 256 << 20
	DefaultTmpBytes           = 64 << 20
)

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
func DefaultLimits() Limits {
	return Limits{
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
func LimitBounds() Bounds {
	return Bounds{
		Min: Limits{
			TimeoutMS:          MinTimeoutMS,
			MemoryBytes:        MinMemoryBytes,
			MilliCPUs:          MinMilliCPUs,
			Pids:               MinPids,
			OutputBytes:        MinOutputBytes,
			OutputCeilingBytes: MinOutputBytes,
			WorkdirBytes:       MinTmpfsBytes,
			TmpBytes:           MinTmpfsBytes,
		},
		Max: Limits{
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

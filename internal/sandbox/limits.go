package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Bounds are the smallest and largest value each limit may take. A Manager
// cannot be built without them (NewManager refuses bounds that are missing or
// inverted), and it checks every run's limits against them after defaults are
// applied: a limit left at zero never reaches a runtime, where an engine may
// read it as "unlimited". The numbers live in internal/config (LimitBounds).
type Bounds struct {
	Min, Max Limits
}

// limitField names one limit for messages and renders its values in the unit
// a person would type. perSandbox marks the limits a runtime must refuse at
// zero in Prepare; the output caps are enforced per job on the host side.
type limitField struct {
	name       string
	get        func(Limits) int64
	unit       func(int64) string
	perSandbox bool
}

// limitFields lists every limit in the order messages report them. The names
// are the CLI flags and configuration keys.
var limitFields = []limitField{
	{"timeout", func(l Limits) int64 { return l.TimeoutMS }, fmtMS, true},
	{"memory", func(l Limits) int64 { return l.MemoryBytes }, FormatBytes, true},
	{"cpus", func(l Limits) int64 { return l.MilliCPUs }, fmtCPUs, true},
	{"pids", func(l Limits) int64 { return l.Pids }, fmtInt, true},
	{"output-limit", func(l Limits) int64 { return l.OutputBytes }, FormatBytes, false},
	{"output-ceiling", func(l Limits) int64 { return l.OutputCeilingBytes }, FormatBytes, false},
	{"workdir-size", func(l Limits) int64 { return l.WorkdirBytes }, FormatBytes, true},
	{"tmp-size", func(l Limits) int64 { return l.TmpBytes }, FormatBytes, true},
}

// Check rejects a zero, negative or out-of-bounds limit with an ErrInvalidSpec
// that names the field, the value and the allowed range. It expects defaults
// applied: a zero is an error, not "unset".
func (b Bounds) Check(l Limits) error {
	for _, f := range limitFields {
		v, lo, hi := f.get(l), f.get(b.Min), f.get(b.Max)
		if v <= 0 || v < lo || v > hi {
			return Invalidf("%s %s is out of range (%s to %s)", f.name, f.unit(v), f.unit(lo), f.unit(hi))
		}
	}
	if l.OutputCeilingBytes < l.OutputBytes {
		return Invalidf("output-ceiling %s is below output-limit %s", FormatBytes(l.OutputCeilingBytes), FormatBytes(l.OutputBytes))
	}
	return nil
}

// valid reports bounds that cannot serve as bounds: a missing (zero) minimum
// would let a zero limit through; a minimum above its maximum admits nothing.
func (b Bounds) valid() error {
	var errs []error
	for _, f := range limitFields {
		lo, hi := f.get(b.Min), f.get(b.Max)
		switch {
		case lo <= 0:
			errs = append(errs, fmt.Errorf("%s: minimum %d is not positive", f.name, lo))
		case hi < lo:
			errs = append(errs, fmt.Errorf("%s: maximum %d is below minimum %d", f.name, hi, lo))
		}
	}
	return errors.Join(errs...)
}

// Validate refuses options a runtime must not act on: a zero or negative
// limit among those that shape the sandbox (memory, CPU, pids, timeout, tmpfs
// sizes). Engines read several zeros as "unlimited" (Docker's memory 0), so
// every runtime calls it first in Prepare, before it creates anything, even
// though the Manager has already checked the same limits against its Bounds.
func (o PrepareOptions) Validate() error {
	for _, f := range limitFields {
		if v := f.get(o.Limits); f.perSandbox && v <= 0 {
			return Invalidf("prepare sandbox: %s %s is not positive", f.name, f.unit(v))
		}
	}
	return nil
}

// FormatBytes renders a size in the largest binary unit that divides it, e.g.
// 512MiB, the way config.ParseBytes reads it back.
func FormatBytes(v int64) string {
	switch {
	case v >= 1<<40 && v%(1<<40) == 0:
		return fmt.Sprintf("%dTiB", v>>40)
	case v >= 1<<30 && v%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", v>>30)
	case v >= 1<<20 && v%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", v>>20)
	case v >= 1<<10 && v%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", v>>10)
	default:
		return fmt.Sprintf("%dB", v)
	}
}

func fmtMS(v int64) string   { return (time.Duration(v) * time.Millisecond).String() }
func fmtInt(v int64) string  { return strconv.FormatInt(v, 10) }
func fmtCPUs(v int64) string { return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64) }

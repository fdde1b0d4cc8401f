package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/units"
)

// Bounds are the smallest and largest value each limit may take. A Manager
// cannot be built without them (NewManager refuses bounds that are missing or
// inverted), and it checks every run's limits against them after defaults are
// applied: a limit left at zero never reaches a runtime, where an engine may
// read it as "unlimited". The standard numbers are LimitBounds (defaults.go).
type Bounds struct {
	Min, Max Limits
}

// LimitUnit is how a limit is written by a person.
type LimitUnit int

// The units of the limits: a duration ("30s"), a size ("512m"), a CPU count
// (0.5) or a plain count (128).
const (
	UnitDuration LimitUnit = iota
	UnitBytes
	UnitCPUs
	UnitCount
)

// LimitField is one limit of the one vocabulary every surface shares: Name is
// the key in HTTP JSON, MCP arguments and aster.yaml (limits.NAME), and, with
// dashes for underscores, the CLI flag (--NAME). PerSandbox marks the limits
// a runtime must refuse at zero in Prepare; the output caps are enforced per
// job on the host side.
type LimitField struct {
	Name       string
	Unit       LimitUnit
	PerSandbox bool
	// Of points at the field's value in l (milliseconds, bytes, milli-CPUs
	// or a count, as the Limits field names say).
	Of func(l *Limits) *int64
}

// Flag is the field's command-line flag, e.g. --output-limit.
func (f LimitField) Flag() string { return "--" + strings.ReplaceAll(f.Name, "_", "-") }

// Format renders v in the unit a person would type: 30s, 512MiB, 0.5, 128.
func (f LimitField) Format(v int64) string {
	switch f.Unit {
	case UnitDuration:
		return (time.Duration(v) * time.Millisecond).String()
	case UnitBytes:
		return units.FormatBytes(v)
	case UnitCPUs:
		return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)
	default:
		return strconv.FormatInt(v, 10)
	}
}

// LimitFields lists every limit in the order messages report them.
func LimitFields() []LimitField {
	return []LimitField{
		{"timeout", UnitDuration, true, func(l *Limits) *int64 { return &l.TimeoutMS }},
		{"memory", UnitBytes, true, func(l *Limits) *int64 { return &l.MemoryBytes }},
		{"cpus", UnitCPUs, true, func(l *Limits) *int64 { return &l.MilliCPUs }},
		{"pids", UnitCount, true, func(l *Limits) *int64 { return &l.Pids }},
		{"output_limit", UnitBytes, false, func(l *Limits) *int64 { return &l.OutputBytes }},
		{"output_ceiling", UnitBytes, false, func(l *Limits) *int64 { return &l.OutputCeilingBytes }},
		{"workdir_size", UnitBytes, true, func(l *Limits) *int64 { return &l.WorkdirBytes }},
		{"tmp_size", UnitBytes, true, func(l *Limits) *int64 { return &l.TmpBytes }},
	}
}

// LimitFieldNamed returns the field called name (a LimitFields name).
func LimitFieldNamed(name string) (LimitField, bool) {
	for _, f := range LimitFields() {
		if f.Name == name {
			return f, true
		}
	}
	return LimitField{}, false
}

// LimitProblem says what is wrong with a limit.
type LimitProblem int

// The ways a limit can be refused.
const (
	// LimitUnreadable: the text is not a value of the field's unit.
	LimitUnreadable LimitProblem = iota
	// LimitOutOfRange: outside the absolute bounds (Min to Max).
	LimitOutOfRange
	// LimitOverCeiling: above the server's ceiling (Max).
	LimitOverCeiling
	// LimitBelowOutput: output_ceiling below output_limit (Value, Min).
	LimitBelowOutput
)

// LimitError is the one error every surface (HTTP, MCP, CLI, configuration)
// gives for a limit it refuses. It is an ErrInvalidSpec. Its message names the
// field as limits.NAME and renders values in human units:
//
//	limits.memory 93.1GiB is above this server's ceiling of 4GiB
type LimitError struct {
	Field   LimitField
	Problem LimitProblem
	// Value is the refused value; for LimitUnreadable, Text and Err say why.
	Value    int64
	Min, Max int64
	Text     string
	Err      error
}

func (e *LimitError) Error() string {
	return ErrInvalidSpec.Error() + ": " + e.Describe("limits."+e.Field.Name)
}

// Unwrap makes a LimitError an ErrInvalidSpec.
func (e *LimitError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidSpec, e.Err}
	}
	return []error{ErrInvalidSpec}
}

// Describe is the message with the field called name, e.g. "--memory" for a
// command-line flag.
func (e *LimitError) Describe(name string) string {
	f := e.Field.Format
	switch e.Problem {
	case LimitUnreadable:
		msg := fmt.Sprintf("%s: %v", name, e.Err)
		if e.Max > 0 {
			msg += fmt.Sprintf(" (%s to %s)", f(e.Min), f(e.Max))
		}
		return msg
	case LimitOverCeiling:
		return fmt.Sprintf("%s %s is above this server's ceiling of %s", name, f(e.Value), f(e.Max))
	case LimitBelowOutput:
		return fmt.Sprintf("%s %s is below limits.output_limit %s", name, f(e.Value), f(e.Min))
	default:
		return fmt.Sprintf("%s %s is out of range (%s to %s)", name, f(e.Value), f(e.Min), f(e.Max))
	}
}

// Check rejects a zero, negative or out-of-bounds limit with a *LimitError
// that names the field, the value and the allowed range. It expects defaults
// applied: a zero is an error, not "unset".
func (b Bounds) Check(l Limits) error {
	for _, f := range LimitFields() {
		v, lo, hi := *f.Of(&l), *f.Of(&b.Min), *f.Of(&b.Max)
		if v <= 0 || v < lo || v > hi {
			return &LimitError{Field: f, Problem: LimitOutOfRange, Value: v, Min: lo, Max: hi}
		}
	}
	if l.OutputCeilingBytes < l.OutputBytes {
		f, _ := LimitFieldNamed("output_ceiling")
		return &LimitError{Field: f, Problem: LimitBelowOutput, Value: l.OutputCeilingBytes, Min: l.OutputBytes}
	}
	return nil
}

// CheckCeilings rejects the first limit of l above its ceiling with a
// *LimitError; a zero ceiling is no ceiling.
func CheckCeilings(l, ceilings Limits) error {
	for _, f := range LimitFields() {
		if c := *f.Of(&ceilings); c > 0 && *f.Of(&l) > c {
			return &LimitError{Field: f, Problem: LimitOverCeiling, Value: *f.Of(&l), Max: c}
		}
	}
	return nil
}

// WithDefaults returns l with every zero field taken from d.
func (l Limits) WithDefaults(d Limits) Limits {
	for _, f := range LimitFields() {
		if *f.Of(&l) == 0 {
			*f.Of(&l) = *f.Of(&d)
		}
	}
	return l
}

// valid reports bounds that cannot serve as bounds: a missing (zero) minimum
// would let a zero limit through; a minimum above its maximum admits nothing.
func (b Bounds) valid() error {
	var errs []error
	for _, f := range LimitFields() {
		lo, hi := *f.Of(&b.Min), *f.Of(&b.Max)
		switch {
		case lo <= 0:
			errs = append(errs, fmt.Errorf("%s: minimum %d is not positive", f.Name, lo))
		case hi < lo:
			errs = append(errs, fmt.Errorf("%s: maximum %d is below minimum %d", f.Name, hi, lo))
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
	for _, f := range LimitFields() {
		if v := *f.Of(&o.Limits); f.PerSandbox && v <= 0 {
			return Invalidf("prepare sandbox: %s %s is not positive", f.Name, f.Format(v))
		}
	}
	return nil
}

package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// ResolveLimits is the one way a run's limits are decided, whatever surface
// asked (HTTP JSON, MCP arguments, CLI flags, aster.yaml): each limit req
// gives is read in its unit (ParseLimit) and must not exceed its ceiling; a
// limit req leaves empty takes its default, lowered to the ceiling if need
// be; asking for more kept output than the default output_ceiling raises that
// ceiling; the result must lie within LimitBounds. A zero ceiling is no
// ceiling. Every refusal is a *sandbox.LimitError (an ErrInvalidSpec) naming
// the field as limits.NAME, with values in human units.
func ResolveLimits(req LimitsConfig, defaults, ceilings sandbox.Limits) (sandbox.Limits, error) {
	bounds := LimitBounds()
	out := defaults
	for _, f := range sandbox.LimitFields() {
		text := strings.TrimSpace(*req.Field(f.Name))
		ceiling := *f.Of(&ceilings)
		if text == "" {
			if ceiling > 0 && *f.Of(&out) > ceiling {
				*f.Of(&out) = ceiling
			}
			continue
		}
		v, err := ParseLimit(f, text)
		switch {
		case err != nil:
			return out, &sandbox.LimitError{Field: f, Problem: sandbox.LimitUnreadable, Text: text, Err: err,
				Min: *f.Of(&bounds.Min), Max: *f.Of(&bounds.Max)}
		case ceiling > 0 && v > ceiling:
			return out, &sandbox.LimitError{Field: f, Problem: sandbox.LimitOverCeiling, Value: v, Max: ceiling}
		}
		*f.Of(&out) = v
	}
	if strings.TrimSpace(req.OutputCeiling) == "" && out.OutputCeilingBytes < out.OutputBytes {
		out.OutputCeilingBytes = out.OutputBytes
		if c := ceilings.OutputCeilingBytes; c > 0 {
			out.OutputCeilingBytes = min(out.OutputCeilingBytes, c)
		}
	}
	return out, bounds.Check(out)
}

// ParseLimit reads the text of limit f in its unit: a duration ("30s",
// "1500ms", or a number of seconds) into milliseconds, a size ("512m", "1g",
// or a number of bytes) into bytes, a CPU count ("0.5") into milli-CPUs, or a
// whole number.
func ParseLimit(f sandbox.LimitField, text string) (int64, error) {
	switch f.Unit {
	case sandbox.UnitDuration:
		d, err := units.ParseDuration(text)
		if err != nil {
			return 0, err
		}
		if d > 0 && d < time.Millisecond {
			return 0, fmt.Errorf("duration %q is under 1ms", text)
		}
		return d.Milliseconds(), nil
	case sandbox.UnitBytes:
		return units.ParseBytes(text)
	case sandbox.UnitCPUs:
		return units.ParseCPUs(text)
	default:
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number", text)
		}
		return n, nil
	}
}

// Field is the text of the limit called name (a sandbox.LimitFields name).
func (lc *LimitsConfig) Field(name string) *string {
	switch name {
	case "timeout":
		return &lc.Timeout
	case "memory":
		return &lc.Memory
	case "cpus":
		return &lc.CPUs
	case "pids":
		return &lc.Pids
	case "output_limit":
		return &lc.OutputLimit
	case "output_ceiling":
		return &lc.OutputCeiling
	case "workdir_size":
		return &lc.WorkdirSize
	case "tmp_size":
		return &lc.TmpSize
	}
	panic("config: no limit " + name)
}

// Parse turns the human-unit limits into sandbox.Limits and validates them;
// an empty field takes DefaultLimits. It is ResolveLimits without ceilings.
func (lc LimitsConfig) Parse() (sandbox.Limits, error) {
	return ResolveLimits(lc, DefaultLimits(), sandbox.Limits{})
}

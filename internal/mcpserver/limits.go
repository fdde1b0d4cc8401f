package mcpserver

import (
	"fmt"
	"strconv"
	"time"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
)

// LimitsInput is what a tool call may ask for. Every field is optional: zero
// means the server's default. Units are in the names, as in the HTTP API.
type LimitsInput struct {
	TimeoutMS          int64 `json:"timeout_ms,omitempty"`
	MemoryBytes        int64 `json:"memory_bytes,omitempty"`
	MilliCPUs          int64 `json:"milli_cpus,omitempty"`
	Pids               int64 `json:"pids,omitempty"`
	OutputBytes        int64 `json:"output_bytes,omitempty"`
	OutputCeilingBytes int64 `json:"output_ceiling_bytes,omitempty"`
	WorkdirBytes       int64 `json:"workdir_bytes,omitempty"`
	TmpBytes           int64 `json:"tmp_bytes,omitempty"`
}

// limitField describes one limit for validation messages and schemas.
type limitField struct {
	json string
	desc string
	get  func(*sandbox.Limits) *int64
	in   func(*LimitsInput) *int64
	fmt  func(int64) string
}

var limitFields = []limitField{
	{"timeout_ms", "wall-clock limit in milliseconds; the job is killed when it passes (status timeout)",
		func(l *sandbox.Limits) *int64 { return &l.TimeoutMS }, func(l *LimitsInput) *int64 { return &l.TimeoutMS }, fmtMS},
	{"memory_bytes", "memory limit in bytes, no swap; past it the job is OOM-killed (status oom)",
		func(l *sandbox.Limits) *int64 { return &l.MemoryBytes }, func(l *LimitsInput) *int64 { return &l.MemoryBytes }, config.FormatBytes},
	{"milli_cpus", "CPU quota in thousandths of a CPU (1000 = one CPU)",
		func(l *sandbox.Limits) *int64 { return &l.MilliCPUs }, func(l *LimitsInput) *int64 { return &l.MilliCPUs }, fmtInt},
	{"pids", "maximum processes and threads; forks past it fail",
		func(l *sandbox.Limits) *int64 { return &l.Pids }, func(l *LimitsInput) *int64 { return &l.Pids }, fmtInt},
	{"output_bytes", "bytes of stdout and of stderr kept in the result (first and last halves when longer)",
		func(l *sandbox.Limits) *int64 { return &l.OutputBytes }, func(l *LimitsInput) *int64 { return &l.OutputBytes }, config.FormatBytes},
	{"output_ceiling_bytes", "bytes one stream may write before the job is ended (status output_limit)",
		func(l *sandbox.Limits) *int64 { return &l.OutputCeilingBytes }, func(l *LimitsInput) *int64 { return &l.OutputCeilingBytes }, config.FormatBytes},
	{"workdir_bytes", "size of /work (the files you pass live there)",
		func(l *sandbox.Limits) *int64 { return &l.WorkdirBytes }, func(l *LimitsInput) *int64 { return &l.WorkdirBytes }, config.FormatBytes},
	{"tmp_bytes", "size of /tmp",
		func(l *sandbox.Limits) *int64 { return &l.TmpBytes }, func(l *LimitsInput) *int64 { return &l.TmpBytes }, config.FormatBytes},
}

func fmtMS(v int64) string  { return (time.Duration(v) * time.Millisecond).String() }
func fmtInt(v int64) string { return strconv.FormatInt(v, 10) }

// resolveLimits fills what the caller left zero from defaults and rejects
// negative values and anything above the server's ceilings, naming the field,
// the value and the ceiling. The result still passes config.ValidateLimits.
func resolveLimits(in *LimitsInput, defaults, ceilings sandbox.Limits) (sandbox.Limits, error) {
	var req LimitsInput
	if in != nil {
		req = *in
	}
	out := defaults
	for _, f := range limitFields {
		v := *f.in(&req)
		switch {
		case v < 0:
			return out, sandbox.Invalidf("limits.%s is negative (%d)", f.json, v)
		case v == 0:
			// Keep the default, but never above the ceiling.
			if c := *f.get(&ceilings); c > 0 && *f.get(&out) > c {
				*f.get(&out) = c
			}
		default:
			if c := *f.get(&ceilings); c > 0 && v > c {
				return out, sandbox.Invalidf("limits.%s %s is above this server's ceiling of %s", f.json, f.fmt(v), f.fmt(c))
			}
			*f.get(&out) = v
		}
	}
	if out.OutputCeilingBytes < out.OutputBytes && (in == nil || in.OutputCeilingBytes == 0) {
		// Asking for more kept output than the default ceiling raises the ceiling.
		out.OutputCeilingBytes = out.OutputBytes
	}
	if err := config.ValidateLimits(out); err != nil {
		return out, fmt.Errorf("limits: %w", err)
	}
	return out, nil
}

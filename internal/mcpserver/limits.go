package mcpserver

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
)

// LimitsInput is what a tool call may ask for, in the names and units of the
// HTTP API, the CLI flags and aster.yaml: durations and sizes as strings with
// a unit ("5s", "256m"), cpus as a decimal number, pids as a whole number.
// Every field is optional: absent means the server's default.
//
// The integer fields with units in their names (timeout_ms, memory_bytes, ...)
// are the names of the previous release, still accepted with a deprecation
// notice in the tool result; they go in the next release.
type LimitsInput struct {
	Timeout       string  `json:"timeout,omitempty"`
	Memory        string  `json:"memory,omitempty"`
	CPUs          float64 `json:"cpus,omitempty"`
	Pids          int64   `json:"pids,omitempty"`
	OutputLimit   string  `json:"output_limit,omitempty"`
	OutputCeiling string  `json:"output_ceiling,omitempty"`
	WorkdirSize   string  `json:"workdir_size,omitempty"`
	TmpSize       string  `json:"tmp_size,omitempty"`

	TimeoutMS          int64 `json:"timeout_ms,omitempty"`
	MemoryBytes        int64 `json:"memory_bytes,omitempty"`
	MilliCPUs          int64 `json:"milli_cpus,omitempty"`
	OutputBytes        int64 `json:"output_bytes,omitempty"`
	OutputCeilingBytes int64 `json:"output_ceiling_bytes,omitempty"`
	WorkdirBytes       int64 `json:"workdir_bytes,omitempty"`
	TmpBytes           int64 `json:"tmp_bytes,omitempty"`
}

// limitDocs describes each limit of the one vocabulary for the input schema.
var limitDocs = map[string]string{
	"timeout":        `wall-clock limit, e.g. "5s", "2m", "1500ms"; the job is killed when it passes (status timeout)`,
	"memory":         `memory limit, no swap, e.g. "256m", "1g"; past it the job is OOM-killed (status oom)`,
	"cpus":           `CPU limit as a number of CPUs, e.g. 0.5 or 2`,
	"pids":           `maximum processes and threads; forks past it fail`,
	"output_limit":   `output kept per stream in the result, e.g. "1m" (first and last halves when longer)`,
	"output_ceiling": `output one stream may write before the job is ended (status output_limit), e.g. "64m"`,
	"workdir_size":   `size of /work (the files you pass live there), e.g. "256m"`,
	"tmp_size":       `size of /tmp, e.g. "64m"`,
}

// deprecatedLimit is a name of the previous release: its value and how it
// reads in the one vocabulary.
type deprecatedLimit struct {
	old, name string
	get       func(*LimitsInput) int64
	text      func(int64) string
}

func deprecatedLimits() []deprecatedLimit {
	plain := func(v int64) string { return strconv.FormatInt(v, 10) } // a bare number is bytes
	return []deprecatedLimit{
		{"timeout_ms", "timeout", func(l *LimitsInput) int64 { return l.TimeoutMS }, func(v int64) string { return plain(v) + "ms" }},
		{"memory_bytes", "memory", func(l *LimitsInput) int64 { return l.MemoryBytes }, plain},
		{"milli_cpus", "cpus", func(l *LimitsInput) int64 { return l.MilliCPUs },
			func(v int64) string { return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64) }},
		{"output_bytes", "output_limit", func(l *LimitsInput) int64 { return l.OutputBytes }, plain},
		{"output_ceiling_bytes", "output_ceiling", func(l *LimitsInput) int64 { return l.OutputCeilingBytes }, plain},
		{"workdir_bytes", "workdir_size", func(l *LimitsInput) int64 { return l.WorkdirBytes }, plain},
		{"tmp_bytes", "tmp_size", func(l *LimitsInput) int64 { return l.TmpBytes }, plain},
	}
}

// request turns the arguments into the one vocabulary's text, with a notice
// for each deprecated name used. A limit given under both names is refused.
func (in *LimitsInput) request() (config.LimitsConfig, []string, error) {
	var lc config.LimitsConfig
	if in == nil {
		return lc, nil, nil
	}
	lc = config.LimitsConfig{Timeout: in.Timeout, Memory: in.Memory, OutputLimit: in.OutputLimit,
		OutputCeiling: in.OutputCeiling, WorkdirSize: in.WorkdirSize, TmpSize: in.TmpSize}
	if in.CPUs != 0 {
		lc.CPUs = strconv.FormatFloat(in.CPUs, 'f', -1, 64)
	}
	if in.Pids != 0 {
		lc.Pids = strconv.FormatInt(in.Pids, 10)
	}
	var notices []string
	for _, d := range deprecatedLimits() {
		v := d.get(in)
		if v == 0 { // absent; a negative value is refused in its new unit
			continue
		}
		dst := lc.Field(d.name)
		if *dst != "" {
			return lc, nil, sandbox.Invalidf("limits.%s and limits.%s (its deprecated name) are both given; give only limits.%s", d.name, d.old, d.name)
		}
		*dst = d.text(v)
		notices = append(notices, fmt.Sprintf("limits.%s is deprecated and will be removed in the next release: use limits.%s (%s)", d.old, d.name, example(d.name)))
	}
	return lc, notices, nil
}

func example(name string) string {
	switch name {
	case "timeout":
		return `e.g. "30s"`
	case "cpus":
		return "e.g. 0.5"
	default:
		return `e.g. "256m"`
	}
}

// resolveLimits is config.ResolveLimits over a tool call's limits: the
// server's defaults for what the call leaves out, its ceilings and the
// absolute bounds for what it asks. It returns the deprecation notices of
// the call's old names.
func resolveLimits(in *LimitsInput, defaults, ceilings sandbox.Limits) (sandbox.Limits, []string, error) {
	req, notices, err := in.request()
	if err != nil {
		return sandbox.Limits{}, nil, err
	}
	l, err := config.ResolveLimits(req, defaults, ceilings)
	return l, notices, err
}

// withNotice adds the call's deprecation notices to a tool result's content,
// as a text of their own after the result's.
func withNotice(content []mcp.Content, notices []string) []mcp.Content {
	if len(notices) == 0 {
		return content
	}
	return append(content, &mcp.TextContent{Text: "Deprecation notice: " + strings.Join(notices, "; ") + "."})
}

// logDeprecated logs once per call that it used deprecated limit names, so an
// operator can see which clients still need to change before the names go.
func (s *Server) logDeprecated(tool string, notices []string) {
	if len(notices) > 0 {
		s.log.Warn("deprecated limit names in a tool call", "tool", tool, "notices", notices)
	}
}

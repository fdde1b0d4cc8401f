package testphase

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// Bounds of the error lines kept from a failed install.
const (
	maxErrorLines    = 10
	maxErrorLineRune = 300
)

// errorLike matches the lines package managers use to say what went wrong.
var errorLike = regexp.MustCompile(`(?i)(\berr(or)?\b|ERR!|\bfatal\b|\bfailed\b|\bcannot\b|\bcould not\b|\bnot found\b|\bno matching\b|\bdenied\b|\brefused\b)`)

// errorLines are the first error-looking lines of a failed run's output
// (stderr, then stdout), or its last lines when none looks like an error.
func errorLines(res sandbox.Result) []string {
	var all []string
	for _, o := range []sandbox.Output{res.Stderr, res.Stdout} {
		for _, l := range strings.Split(strings.ToValidUTF8(string(o.Data), "\uFFFD"), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				all = append(all, clipLine(l))
			}
		}
	}
	var out []string
	for _, l := range all {
		if errorLike.MatchString(l) {
			out = append(out, l)
			if len(out) == maxErrorLines {
				return out
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	if len(all) > maxErrorLines {
		all = all[len(all)-maxErrorLines:]
	}
	if res.Error != "" {
		all = append(all, clipLine(res.Error))
	}
	return all
}

func clipLine(s string) string {
	r := []rune(s)
	if len(r) > maxErrorLineRune {
		return string(r[:maxErrorLineRune]) + " [...]"
	}
	return s
}

// phaseReason says in one line why a phase's run did not succeed.
func phaseReason(phase string, res sandbox.Result, l sandbox.Limits) string {
	switch res.Status {
	case sandbox.StatusExitNonzero:
		if res.ExitCode == 127 {
			return fmt.Sprintf("the %s command is not installed in the image", phase)
		}
		return fmt.Sprintf("the %s command exited with code %d", phase, res.ExitCode)
	case sandbox.StatusTimeout:
		return fmt.Sprintf("the %s phase ran past its %s limit and was killed", phase, l.Timeout())
	case sandbox.StatusOOM:
		return fmt.Sprintf("the %s phase ran out of memory (%s)", phase, units.FormatBytes(l.MemoryBytes))
	case sandbox.StatusOutputLimit:
		return fmt.Sprintf("the %s phase wrote more output than its ceiling", phase)
	case sandbox.StatusKilled:
		return fmt.Sprintf("the %s phase was killed: %s", phase, res.Error)
	}
	if res.Error != "" {
		return fmt.Sprintf("the %s phase could not run: %s", phase, res.Error)
	}
	return fmt.Sprintf("the %s phase ended %s", phase, res.Status)
}

// Lines describe an install phase for a person, one fact a line, without
// markup: its status and why, the time it took, the downloads, the cache,
// and the first error lines of a failure. nil for nil.
func Lines(in *api.InstallResult) []string {
	if in == nil {
		return nil
	}
	cmd := strings.Join(in.Command, " ")
	var out []string
	switch in.Status {
	case api.InstallOK:
		out = append(out, fmt.Sprintf("install (%s): ok in %s: %s", in.Kind, ms(in.DurationMS), cmd))
	case api.InstallCached:
		out = append(out, fmt.Sprintf("install (%s): skipped, dependencies restored from the cache: %s", in.Kind, cmd))
	case api.InstallFailed:
		out = append(out, fmt.Sprintf("install (%s): FAILED after %s, the tests did not run: %s", in.Kind, ms(in.DurationMS), cmd))
		if in.Reason != "" {
			out = append(out, "install failure: "+in.Reason)
		}
	default:
		out = append(out, fmt.Sprintf("install (%s): not run: %s", in.Kind, in.Reason))
	}
	d := in.Downloads
	if d.Connections > 0 || d.Refused > 0 {
		hosts := "none"
		if len(d.Hosts) > 0 {
			hosts = strings.Join(d.Hosts, ", ")
		}
		line := fmt.Sprintf("downloads: %s from %s over %d connections", units.FormatBytes(d.Bytes), hosts, d.Connections)
		if d.Refused > 0 {
			line += fmt.Sprintf("; %d refused (%s)", d.Refused, strings.Join(d.RefusedHosts, ", "))
		}
		out = append(out, line)
		for _, r := range d.Refusals {
			out = append(out, fmt.Sprintf("  refused %s:%d ×%d: %s (%s)", r.Host, r.Port, r.Count, r.Kind, r.Reason))
		}
	}
	out = append(out, "dependency cache: "+in.Cache)
	for _, l := range in.ErrorLines {
		out = append(out, "  "+l)
	}
	return out
}

func ms(n int64) string {
	return (time.Duration(n) * time.Millisecond).Round(100 * time.Millisecond).String()
}

// Summary is an install phase in one line, for tables: its status, time,
// downloads, cache and (failed or skipped) reason. "" for nil.
func Summary(in *api.InstallResult) string {
	if in == nil {
		return ""
	}
	var parts []string
	switch in.Status {
	case api.InstallCached:
		parts = append(parts, "install "+in.Kind+" restored from the cache")
	case api.InstallSkipped:
		return "install " + in.Kind + " not run: " + in.Reason
	default:
		parts = append(parts, fmt.Sprintf("install %s %s in %s", in.Kind, in.Status, ms(in.DurationMS)))
	}
	if d := in.Downloads; d.Connections > 0 {
		parts = append(parts, fmt.Sprintf("%s from %s", units.FormatBytes(d.Bytes), strings.Join(d.Hosts, ", ")))
	}
	if in.Downloads.Refused > 0 {
		part := fmt.Sprintf("%d connections refused", in.Downloads.Refused)
		var why []string
		for _, r := range in.Downloads.Refusals {
			if len(why) == 3 {
				why = append(why, "…")
				break
			}
			why = append(why, r.Host+": "+r.Kind)
		}
		if len(why) > 0 {
			part += " (" + strings.Join(why, "; ") + ")"
		}
		parts = append(parts, part)
	}
	parts = append(parts, "cache "+in.Cache)
	s := strings.Join(parts, ", ")
	if in.Status == api.InstallFailed && in.Reason != "" {
		s += ": " + in.Reason
	}
	return s
}

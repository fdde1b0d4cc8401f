package mcpserver

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// renderResult is the short text form of a run that goes beside the
// structured result: one status line, what the limits did, then both
// streams. Truncation is said in words, not left to a flag.
func renderResult(r sandbox.Result, l sandbox.Limits) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s", r.Status)
	switch {
	case r.Status == sandbox.StatusOK || r.Status == sandbox.StatusExitNonzero:
		fmt.Fprintf(&b, " (exit code %d)", r.ExitCode)
	case r.Signal != "":
		fmt.Fprintf(&b, " (%s)", r.Signal)
	}
	fmt.Fprintf(&b, " · %s wall · %s CPU · peak memory %s · run %s\n",
		round(r.Duration), round(r.CPUTime), units.FormatBytes(r.PeakMemoryBytes), r.ID)
	if note := r.Explain(l); note != "" {
		b.WriteString(note)
		b.WriteByte('\n')
	}
	renderStream(&b, "stdout", r.Stdout, l)
	renderStream(&b, "stderr", r.Stderr, l)
	return b.String()
}

func renderStream(b *strings.Builder, name string, o sandbox.Output, l sandbox.Limits) {
	if o.TotalBytes == 0 && len(o.Data) == 0 {
		fmt.Fprintf(b, "%s: (empty)\n", name)
		return
	}
	fmt.Fprintf(b, "%s (%s", name, units.FormatBytes(o.TotalBytes))
	if o.Truncated {
		fmt.Fprintf(b, ", TRUNCATED: only the first and last %s of %s are kept, %s dropped in the middle where the marker is",
			units.FormatBytes(l.OutputBytes/2), units.FormatBytes(o.TotalBytes), units.FormatBytes(o.DroppedBytes))
	}
	data := o.Data
	if !utf8.Valid(data) {
		b.WriteString(", not valid UTF-8: shown with replacement characters here; the exact bytes are base64 in the structured result")
		data = []byte(strings.ToValidUTF8(string(data), "\uFFFD"))
	}
	b.WriteString("):\n")
	b.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteByte('\n')
	}
}

func round(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

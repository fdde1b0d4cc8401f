package sandbox

import (
	"fmt"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/units"
)

// Encodings of output in JSON (see api.EncodeText).
const (
	EncodingUTF8   = api.EncodingUTF8
	EncodingBase64 = api.EncodingBase64
)

// WireResult is the JSON shape of a Result, shared by `aster exec --json`, the
// HTTP API, the Go client and the MCP tools: the public api.Result.
type WireResult = api.Result

// Wire converts a Result to its JSON shape.
func (r Result) Wire() WireResult {
	w := WireResult{
		ID:                 r.ID,
		Status:             r.Status,
		ExitCode:           r.ExitCode,
		Signal:             r.Signal,
		StdoutTruncated:    r.Stdout.Truncated,
		StdoutBytes:        r.Stdout.TotalBytes,
		StdoutDroppedBytes: r.Stdout.DroppedBytes,
		StderrTruncated:    r.Stderr.Truncated,
		StderrBytes:        r.Stderr.TotalBytes,
		StderrDroppedBytes: r.Stderr.DroppedBytes,
		DurationMS:         r.Duration.Milliseconds(),
		CPUMS:              r.CPUTime.Milliseconds(),
		PeakMemoryBytes:    r.PeakMemoryBytes,
		OOMKilled:          r.OOMKilled,
		Runtime:            r.Runtime,
		Image:              r.Image,
		ImageDigest:        r.ImageDigest,
		Error:              r.Error,
		TimingsMS:          map[string]int64{},
	}
	w.Stdout, w.StdoutEncoding = api.EncodeText(r.Stdout.Data)
	w.Stderr, w.StderrEncoding = api.EncodeText(r.Stderr.Data)
	for k, v := range r.Timings {
		w.TimingsMS[k] = v.Milliseconds()
	}
	return w
}

// FromWire converts the JSON shape back to a Result.
func FromWire(w WireResult) (Result, error) {
	stdout, err := w.Output(Stdout)
	if err != nil {
		return Result{}, fmt.Errorf("stdout: %w", err)
	}
	stderr, err := w.Output(Stderr)
	if err != nil {
		return Result{}, fmt.Errorf("stderr: %w", err)
	}
	r := Result{
		ID:              w.ID,
		Status:          w.Status,
		ExitCode:        w.ExitCode,
		Signal:          w.Signal,
		Stdout:          Output{Data: stdout, Truncated: w.StdoutTruncated, TotalBytes: w.StdoutBytes, DroppedBytes: w.StdoutDroppedBytes},
		Stderr:          Output{Data: stderr, Truncated: w.StderrTruncated, TotalBytes: w.StderrBytes, DroppedBytes: w.StderrDroppedBytes},
		Duration:        time.Duration(w.DurationMS) * time.Millisecond,
		CPUTime:         time.Duration(w.CPUMS) * time.Millisecond,
		PeakMemoryBytes: w.PeakMemoryBytes,
		OOMKilled:       w.OOMKilled,
		Runtime:         w.Runtime,
		Image:           w.Image,
		ImageDigest:     w.ImageDigest,
		Error:           w.Error,
		Timings:         map[string]time.Duration{},
	}
	for k, v := range w.TimingsMS {
		r.Timings[k] = time.Duration(v) * time.Millisecond
	}
	return r, nil
}

// Explain says in one sentence what a status that is not a plain exit means for the job under
// l (which limit ended it, or why it did not run), for people reading text: `aster exec`'s
// stderr and the MCP tool's text. It is empty for ok and exit_nonzero.
func (r Result) Explain(l Limits) string {
	switch r.Status {
	case StatusTimeout:
		return fmt.Sprintf("The job ran past its %s wall-clock limit and was killed.", l.Timeout())
	case StatusOOM:
		return fmt.Sprintf("The job ran out of its %s of memory and was killed by the OOM killer.", units.FormatBytes(l.MemoryBytes))
	case StatusOutputLimit:
		return fmt.Sprintf("The job wrote more than %s to one output stream and was ended (output_limit).", units.FormatBytes(l.OutputCeilingBytes))
	case StatusKilled:
		if r.Error != "" {
			return "The job was killed: " + r.Error
		}
		return "The job was killed by a signal."
	case StatusError:
		return "The sandbox could not run the job: " + r.Error
	}
	return ""
}

// ExitCode is the exit status `aster exec` uses for a Result: the command's own
// code for ok and exit_nonzero, 124 for timeout, 125 for output_limit, 137 for
// oom, 128+n for a signal, and 126 when the sandbox could not run the job.
func (r Result) CLIExitCode() int {
	switch r.Status {
	case StatusOK:
		return 0
	case StatusExitNonzero:
		if r.ExitCode > 0 && r.ExitCode < 256 {
			return r.ExitCode
		}
		return 1
	case StatusTimeout:
		return 124
	case StatusOutputLimit:
		return 125
	case StatusOOM:
		return 137
	case StatusKilled:
		if n := signalNumber(r.Signal); n > 0 {
			return 128 + n
		}
		return 137
	}
	return 126
}

func signalNumber(name string) int {
	for n := 1; n <= 64; n++ {
		if SignalName(n) == name {
			return n
		}
	}
	return 0
}

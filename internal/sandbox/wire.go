package sandbox

import (
	"encoding/base64"
	"fmt"
	"time"
	"unicode/utf8"
)

// Encodings of output in JSON: text that is valid UTF-8 travels as is; anything
// else (binary, invalid UTF-8) travels as base64 and says so.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// WireResult is the JSON shape of a Result, shared by `aster exec --json`, the
// HTTP API, the Go client and the MCP tools. Every field is always present.
type WireResult struct {
	ID                 string           `json:"id"`
	Status             Status           `json:"status"`
	ExitCode           int              `json:"exit_code"`
	Signal             string           `json:"signal"`
	Stdout             string           `json:"stdout"`
	StdoutEncoding     string           `json:"stdout_encoding"`
	StdoutTruncated    bool             `json:"stdout_truncated"`
	StdoutBytes        int64            `json:"stdout_bytes"`
	StdoutDroppedBytes int64            `json:"stdout_dropped_bytes"`
	Stderr             string           `json:"stderr"`
	StderrEncoding     string           `json:"stderr_encoding"`
	StderrTruncated    bool             `json:"stderr_truncated"`
	StderrBytes        int64            `json:"stderr_bytes"`
	StderrDroppedBytes int64            `json:"stderr_dropped_bytes"`
	DurationMS         int64            `json:"duration_ms"`
	CPUMS              int64            `json:"cpu_ms"`
	PeakMemoryBytes    int64            `json:"peak_memory_bytes"`
	OOMKilled          bool             `json:"oom_killed"`
	Runtime            string           `json:"runtime"`
	Image              string           `json:"image"`
	ImageDigest        string           `json:"image_digest"`
	Error              string           `json:"error"`
	TimingsMS          map[string]int64 `json:"timings_ms"`
}

// EncodeOutput returns data as a JSON-safe string and its encoding.
func EncodeOutput(data []byte) (string, string) {
	if utf8.Valid(data) {
		return string(data), EncodingUTF8
	}
	return base64.StdEncoding.EncodeToString(data), EncodingBase64
}

// DecodeOutput reverses EncodeOutput.
func DecodeOutput(s, encoding string) ([]byte, error) {
	switch encoding {
	case EncodingUTF8, "":
		return []byte(s), nil
	case EncodingBase64:
		return base64.StdEncoding.DecodeString(s)
	}
	return nil, fmt.Errorf("unknown output encoding %q", encoding)
}

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
	w.Stdout, w.StdoutEncoding = EncodeOutput(r.Stdout.Data)
	w.Stderr, w.StderrEncoding = EncodeOutput(r.Stderr.Data)
	for k, v := range r.Timings {
		w.TimingsMS[k] = v.Milliseconds()
	}
	return w
}

// Result converts the JSON shape back to a Result.
func (w WireResult) Result() (Result, error) {
	stdout, err := DecodeOutput(w.Stdout, w.StdoutEncoding)
	if err != nil {
		return Result{}, fmt.Errorf("stdout: %w", err)
	}
	stderr, err := DecodeOutput(w.Stderr, w.StderrEncoding)
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

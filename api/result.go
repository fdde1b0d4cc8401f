package api

import (
	"encoding/base64"
	"unicode/utf8"
)

// Status says how a run ended. It is always set.
type Status string

// The statuses of a run.
const (
	StatusOK          Status = "ok"           // the command exited 0
	StatusExitNonzero Status = "exit_nonzero" // the command exited with a non-zero code
	StatusTimeout     Status = "timeout"      // the wall-clock deadline passed; the job was killed
	StatusOOM         Status = "oom"          // the kernel's OOM killer ended a process of the job
	StatusOutputLimit Status = "output_limit" // the job wrote past the hard output ceiling and was ended
	StatusKilled      Status = "killed"       // ended by a signal that no limit explains, or cancelled by the caller
	StatusError       Status = "error"        // the sandbox could not run the job (engine, image, protocol)
)

// Stream names an output stream of a job.
type Stream string

// The output streams.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Encodings of text in JSON: text that is valid UTF-8 travels as is; anything
// else (binary, invalid UTF-8) travels as base64 and says so.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// EncodeText returns data as a JSON-safe string and its encoding.
func EncodeText(data []byte) (string, string) {
	if utf8.Valid(data) {
		return string(data), EncodingUTF8
	}
	return base64.StdEncoding.EncodeToString(data), EncodingBase64
}

// Result is the JSON shape of a finished run, shared by `aster exec --json`,
// the body of /v1/execute, the last event of a stream and the MCP tools.
// Every field is always present.
type Result struct {
	ID       string `json:"id"`
	Status   Status `json:"status"`
	ExitCode int    `json:"exit_code"`
	// Signal names the signal that ended the command ("SIGKILL"), if one did.
	Signal string `json:"signal"`
	// Stdout is the output kept (head and tail past the output limit), in
	// StdoutEncoding; Output decodes it. StdoutBytes counts all the command
	// wrote, StdoutDroppedBytes what was not kept.
	Stdout             string `json:"stdout"`
	StdoutEncoding     string `json:"stdout_encoding"`
	StdoutTruncated    bool   `json:"stdout_truncated"`
	StdoutBytes        int64  `json:"stdout_bytes"`
	StdoutDroppedBytes int64  `json:"stdout_dropped_bytes"`
	// Stderr is the same for standard error.
	Stderr             string `json:"stderr"`
	StderrEncoding     string `json:"stderr_encoding"`
	StderrTruncated    bool   `json:"stderr_truncated"`
	StderrBytes        int64  `json:"stderr_bytes"`
	StderrDroppedBytes int64  `json:"stderr_dropped_bytes"`
	DurationMS         int64  `json:"duration_ms"`
	CPUMS              int64  `json:"cpu_ms"`
	PeakMemoryBytes    int64  `json:"peak_memory_bytes"`
	OOMKilled          bool   `json:"oom_killed"`
	// Runtime, Image and ImageDigest say where the job ran.
	Runtime     string `json:"runtime"`
	Image       string `json:"image"`
	ImageDigest string `json:"image_digest"`
	// Error says why the sandbox could not run the job (status "error").
	Error string `json:"error"`
	// TimingsMS are the phases of the run (queue, create, start, ...).
	TimingsMS map[string]int64 `json:"timings_ms"`
}

// Output decodes the kept output of one stream.
func (r Result) Output(s Stream) ([]byte, error) {
	if s == Stderr {
		return DecodeText(r.Stderr, r.StderrEncoding)
	}
	return DecodeText(r.Stdout, r.StdoutEncoding)
}

// ExecuteResponse is the body of a finished /v1/execute: the same fields as
// `aster exec --json`.
type ExecuteResponse = Result

// TestResponse is the body of a finished /v1/test: the run's result plus the
// parsed test summary and the command that ran.
//
// With an install phase, the result is the test phase's, or the install
// phase's when that failed and the tests did not run (Phase says which).
type TestResponse struct {
	Result
	Command []string    `json:"command"`
	Tests   TestSummary `json:"tests"`
	// Phase is the phase the result is of: "test", or "install" when the
	// install phase failed and the tests were not run.
	Phase string `json:"phase"`
	// Install is the install phase; absent when the project has no
	// dependency step.
	Install *InstallResult `json:"install,omitempty"`
}

// Install phase statuses.
const (
	InstallOK      = "ok"      // the dependencies were installed
	InstallCached  = "cached"  // the dependency cache had them; no install ran
	InstallFailed  = "failed"  // the install command failed or hit a limit; the tests did not run
	InstallSkipped = "skipped" // not run (Reason says why); the tests ran without dependencies
)

// Dependency cache outcomes.
const (
	CacheHit  = "hit"
	CacheMiss = "miss"
	CacheOff  = "off" // no cache for this run (Reason of the cache says why)
)

// InstallResult is the install phase of a test run.
type InstallResult struct {
	// Status is ok, cached, failed or skipped.
	Status string `json:"status"`
	// Kind is npm, go, pip or custom (a given setup command).
	Kind    string   `json:"kind"`
	Command []string `json:"command"`
	// Reason says in one line why the phase failed or was skipped.
	Reason string `json:"reason,omitempty"`
	// ID, SandboxStatus, ExitCode and DurationMS describe the install
	// sandbox's run (ID empty, ExitCode -1 when none ran).
	ID            string `json:"id"`
	SandboxStatus Status `json:"sandbox_status,omitempty"`
	ExitCode      int    `json:"exit_code"`
	DurationMS    int64  `json:"duration_ms"`
	// ErrorLines are the first lines of the install's output that look
	// like errors (or its last lines), for a failed install.
	ErrorLines []string `json:"error_lines,omitempty"`
	// Downloads is what went through the egress relay.
	Downloads Downloads `json:"downloads"`
	// Cache is hit, miss or off.
	Cache string `json:"cache"`
}

// Downloads is what an install phase fetched through the egress relay.
type Downloads struct {
	// Hosts are the hosts reached (sorted, each once).
	Hosts []string `json:"hosts"`
	// Bytes counts both directions of every tunnel.
	Bytes       int64 `json:"bytes"`
	Connections int   `json:"connections"`
	// Refused counts the tunnels the relay refused; RefusedHosts names
	// their hosts (at most 20).
	Refused      int      `json:"refused"`
	RefusedHosts []string `json:"refused_hosts,omitempty"`
	// Refusals say, per host and reason, why tunnels were not opened (at
	// most 20 entries).
	Refusals []EgressRefusal `json:"refusals,omitempty"`
}

// EgressRefusal is one host's refused tunnels of one kind.
type EgressRefusal struct {
	Host string `json:"host"`
	Port int    `json:"port"`
	// Kind is the short reason: "not allowed", "private address not
	// admitted for this host", "not a host name", "connection cap",
	// "unreachable", "run ended", or "credential rejected upstream" (a
	// request through a credentialed host the upstream answered 401 or 403:
	// Reason "credential rejected upstream: 401"); Reason the relay's whole
	// sentence (of the first).
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// TestSummary is what a test run reported. Counts are of leaf tests: a Go
// test with subtests counts its subtests, not itself; a pytest parametrised
// test counts each case.
type TestSummary struct {
	// Framework is "go", "pytest", "npm" or "custom".
	Framework string `json:"framework"`
	// Format is the report format that was read.
	Format ReportFormat `json:"format"`
	// Parsed says a report was found and read (fully, unless Error says otherwise).
	Parsed  bool `json:"parsed"`
	Passed  int  `json:"passed"`
	Failed  int  `json:"failed"`
	Skipped int  `json:"skipped"`
	// Failures lists failed tests (errors included), at most 100.
	Failures []TestFailure `json:"failures"`
	// FailuresOmitted counts failed tests not listed in Failures.
	FailuresOmitted int `json:"failures_omitted"`
	// Error says why the report could not be read, or was read only in part.
	Error string `json:"error,omitempty"`
}

// TestFailure is one failed test.
type TestFailure struct {
	Name string `json:"name"`
	// Suite is the Go package, or the JUnit classname (pytest: the module).
	Suite string `json:"suite,omitempty"`
	// Message is the failure's output (its last bytes when it was long).
	Message string `json:"message"`
}

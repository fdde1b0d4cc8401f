package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// JobRequest is what /v1/execute and /v1/test share: where and with what a
// command runs. Unknown fields are refused, so a typo is a 400, not a silent
// default.
type JobRequest struct {
	// Image must be on the server's allowlist; empty is the default image.
	Image string `json:"image,omitempty"`
	// Files maps a path relative to /work to its content. A JSON request may
	// carry files or a snapshot (tar body), not both.
	Files map[string]File `json:"files,omitempty"`
	// Stdin is the command's standard input; StdinEncoding is "utf-8" (the
	// default) or "base64".
	Stdin         string `json:"stdin,omitempty"`
	StdinEncoding string `json:"stdin_encoding,omitempty"`
	// Env is the command's whole environment (plus PATH, HOME and LANG
	// defaults); nothing of the server's own environment is passed.
	Env map[string]string `json:"env,omitempty"`
	// Workdir is relative to /work.
	Workdir string `json:"workdir,omitempty"`
	// Limits left out take the server's defaults.
	Limits Limits `json:"limits,omitzero"`
}

// ExecuteRequest is the body of POST /v1/execute.
type ExecuteRequest struct {
	// Argv is executed directly, with no shell.
	Argv []string `json:"argv"`
	JobRequest
}

// TestRequest is the body of POST /v1/test.
type TestRequest struct {
	// Command runs the tests; empty means detected from the project's files.
	Command []string `json:"command,omitempty"`
	// Report says how to read Command's results (detected commands need none).
	Report *ReportRequest `json:"report,omitempty"`
	// Setup is the dependency step, an argv run directly (write a shell
	// script as ["sh", "-c", "..."]); empty means detected from the project
	// (npm ci/install, go mod download, pip). It runs in an install phase
	// whose only way out is the server's egress relay, before the tests run
	// in a fresh sandbox with no network.
	Setup []string `json:"setup,omitzero"`
	// InstallTimeout bounds the install phase (default: the server's
	// install timeout; at most the timeout ceiling).
	InstallTimeout Quantity `json:"install_timeout,omitempty"`
	// CacheKey names the repository for the server's dependency cache; it
	// is used only when the operator lets callers name one, and an entry is
	// only ever offered to the same key.
	CacheKey string `json:"cache_key,omitempty"`
	// CacheScope, with CacheKey, is where in the repository the tree comes
	// from ("pr:12", "ref:refs/heads/x"): the install's entry is written
	// there and offered only to it; a run reads its own scope's entry, else
	// the default scope's. Empty: the default scope ("default", the default
	// branch), whose entries every scope reads.
	CacheScope string `json:"cache_scope,omitempty"`
	JobRequest
}

// ReportFormat names a machine-readable test report format.
type ReportFormat string

// The report formats a test run can be read in.
const (
	ReportGoTestJSON ReportFormat = "go-test-json" // `go test -json` events on stdout
	ReportJUnitXML   ReportFormat = "junit-xml"    // a JUnit XML file, copied to stdout after the run
	ReportNone       ReportFormat = "none"         // no machine-readable report
)

// ReportRequest names the report a custom test command leaves.
type ReportRequest struct {
	// Format is "go-test-json", "junit-xml" or "none".
	Format ReportFormat `json:"format"`
	// Path is where a junit-xml command writes its report in the sandbox.
	Path string `json:"path,omitempty"`
}

// Limits are a request's limits in human units. Every field is optional (the
// server's default applies) and capped by the server's ceilings.
type Limits struct {
	Timeout       Quantity `json:"timeout,omitempty"`        // "30s", "2m", or a number of seconds
	Memory        Quantity `json:"memory,omitempty"`         // "512m", "1g", or a number of bytes
	CPUs          Quantity `json:"cpus,omitempty"`           // "0.5", or a number
	Pids          Quantity `json:"pids,omitempty"`           // a number
	OutputLimit   Quantity `json:"output_limit,omitempty"`   // bytes kept per stream
	OutputCeiling Quantity `json:"output_ceiling,omitempty"` // bytes per stream that end the job
	WorkdirSize   Quantity `json:"workdir_size,omitempty"`   // size of /work
	TmpSize       Quantity `json:"tmp_size,omitempty"`       // size of /tmp
}

// Quantity is a limit as a person writes it: a string with a unit ("30s",
// "512m") or a bare JSON number.
type Quantity string

// UnmarshalJSON accepts a string or a number.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*q = Quantity(s)
	case len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
		if _, err := strconv.ParseFloat(string(b), 64); err != nil {
			return fmt.Errorf("%s is not a number", b)
		}
		*q = Quantity(b)
	case string(b) == "null":
	default:
		return fmt.Errorf("a limit is a string such as \"512m\" or a number, not %s", b)
	}
	return nil
}

// File is one workspace file: a JSON string (UTF-8 content) or an object
// {"content": "...", "encoding": "base64"}.
type File struct {
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty"` // "utf-8" (default) or "base64"
}

// UnmarshalJSON accepts a string or a {"content","encoding"} object.
func (f *File) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		f.Encoding = ""
		return json.Unmarshal(b, &f.Content)
	}
	// Unknown keys are looked for without decoding any value (skipValue
	// keeps a slice of b), so a large file is decoded once, straight into
	// Content, and not first copied into a decoder's buffer.
	var keys map[string]skipValue
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if k != "content" && k != "encoding" {
			return fmt.Errorf("json: unknown field %q", k)
		}
	}
	type plain File
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = File(p)
	return nil
}

// skipValue accepts any JSON value and keeps nothing.
type skipValue struct{}

func (*skipValue) UnmarshalJSON([]byte) error { return nil }

// Bytes decodes the content.
func (f File) Bytes() ([]byte, error) { return DecodeText(f.Content, f.Encoding) }

// TextFile builds a File of UTF-8 text.
func TextFile(s string) File { return File{Content: s} }

// BinaryFile builds a File of any bytes, encoded as base64.
func BinaryFile(b []byte) File {
	return File{Content: base64.StdEncoding.EncodeToString(b), Encoding: EncodingBase64}
}

// DecodeText decodes text of the API (stdin, a file's content, a result's
// or an event's output) in its encoding: "utf-8" (or empty) or "base64".
func DecodeText(s, encoding string) ([]byte, error) {
	switch encoding {
	case "", EncodingUTF8:
		return []byte(s), nil
	case EncodingBase64:
		return base64.StdEncoding.DecodeString(s)
	}
	return nil, fmt.Errorf("unknown encoding %q (want utf-8 or base64)", encoding)
}

// ValidateRequest is the JSON spec of POST /v1/validate, sent in the
// X-Aster-Spec header of an application/x-tar body or as the "spec" field of
// a multipart/form-data body (whose "workspace" file is the tar).
type ValidateRequest struct {
	// Analyzers names the analyzers to run (default: all the server has).
	Analyzers []string `json:"analyzers,omitempty"`
	// ChangedFiles, when given, limits file-list analyzers to these paths
	// and marks findings by whether they lie in one (reported).
	ChangedFiles []string `json:"changed_files,omitempty"`
}

package sandboxapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testrun"
)

// Media types and headers of the API.
const (
	ContentTypeJSON   = "application/json"
	ContentTypeNDJSON = "application/x-ndjson"
	ContentTypeTar    = "application/x-tar"
	// HeaderSpec carries the JSON spec of an application/x-tar request.
	HeaderSpec = "X-Aster-Spec"
	// HeaderRunID names the run in every response that started one.
	HeaderRunID = "X-Aster-Run-Id"
	// Multipart field names: the JSON spec and the tar snapshot.
	PartSpec      = "spec"
	PartWorkspace = "workspace"
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
	Limits  Limits `json:"limits,omitzero"`
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
	JobRequest
}

// ReportRequest names the report a custom test command leaves.
type ReportRequest struct {
	// Format is "go-test-json", "junit-xml" or "none".
	Format testrun.Format `json:"format"`
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
	for k := range keys {
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
func (f File) Bytes() ([]byte, error) { return decodeText(f.Content, f.Encoding) }

// TextFile and BinaryFile build a File for a request.
func TextFile(s string) File { return File{Content: s} }

// BinaryFile encodes b as base64.
func BinaryFile(b []byte) File {
	return File{Content: base64.StdEncoding.EncodeToString(b), Encoding: sandbox.EncodingBase64}
}

func decodeText(s, encoding string) ([]byte, error) {
	switch encoding {
	case "", sandbox.EncodingUTF8:
		return []byte(s), nil
	case sandbox.EncodingBase64:
		return base64.StdEncoding.DecodeString(s)
	}
	return nil, fmt.Errorf("unknown encoding %q (want utf-8 or base64)", encoding)
}

// ExecuteResponse is the body of a finished /v1/execute: the same fields as
// `aster exec --json`.
type ExecuteResponse = sandbox.WireResult

// TestResponse is the body of a finished /v1/test: the run's result plus the
// parsed test summary and the command that ran.
type TestResponse struct {
	sandbox.WireResult
	Command []string        `json:"command"`
	Tests   testrun.Summary `json:"tests"`
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a machine-readable code and a message for a person.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Event types of an NDJSON stream (Accept: application/x-ndjson). Output
// events come as the job writes; the last event is always "result", possibly
// preceded by one "error" event when the run failed after the stream began.
const (
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventError  = "error"
	EventResult = "result"
)

// OutputEvent is a chunk of the job's output, as it arrived. Data is UTF-8
// text, or base64 when Encoding says so (the bytes were not valid UTF-8).
type OutputEvent struct {
	Type     string `json:"type"`
	Data     string `json:"data"`
	Encoding string `json:"encoding"`
}

// ErrorEvent reports a classified error after the stream began.
type ErrorEvent struct {
	Type  string      `json:"type"`
	Error ErrorDetail `json:"error"`
}

// Event is any line of a stream, as a client decodes it: Type says which of
// the other fields are set. Result holds the raw result object (decode it as
// ExecuteResponse or TestResponse).
type Event struct {
	Type     string
	Data     []byte
	Error    *ErrorDetail
	Result   json.RawMessage
	Encoding string
}

// UnmarshalJSON decodes one stream line.
func (e *Event) UnmarshalJSON(b []byte) error {
	var head struct {
		Type     string          `json:"type"`
		Data     string          `json:"data"`
		Encoding string          `json:"encoding"`
		Error    json.RawMessage `json:"error"` // an object in error events, a string in results
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	e.Type, e.Encoding = head.Type, head.Encoding
	switch head.Type {
	case EventStdout, EventStderr:
		d, err := decodeText(head.Data, head.Encoding)
		if err != nil {
			return err
		}
		e.Data = d
	case EventError:
		var d ErrorDetail
		if err := json.Unmarshal(head.Error, &d); err != nil {
			return fmt.Errorf("error event: %w", err)
		}
		e.Error = &d
	case EventResult:
		e.Result = append(json.RawMessage(nil), b...)
	}
	return nil
}

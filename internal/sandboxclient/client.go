// Package sandboxclient is the typed Go client of the orchestrator API
// (`aster sandbox serve`, package sandboxapi). Calls take options and return
// a result, and errors wrap the sandbox error classes (sandbox.ErrBusy,
// ErrInvalidSpec, ...) so a remote run is handled like a local one.
package sandboxclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/testrun"
)

// maxResponseBytes bounds what is read from one response.
const maxResponseBytes = 1 << 30

// maxHeaderSpecBytes is the largest spec sent in the X-Aster-Spec header;
// larger ones go as a multipart field.
const maxHeaderSpecBytes = 16 << 10

// Options configure a Client.
type Options struct {
	// BaseURL is the server, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Token is sent as a bearer token when set.
	Token string
	// HTTPClient is used for every call; nil is a client with no overall
	// timeout (runs can be long: bound them with the context).
	HTTPClient *http.Client
	UserAgent  string
}

// Client calls the orchestrator API. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	ua    string
}

// New returns a Client.
func New(o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(o.BaseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http://host:port or https://host:port", o.BaseURL)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	ua := o.UserAgent
	if ua == "" {
		ua = "aster-sandboxclient"
	}
	return &Client{base: u, token: o.Token, http: hc, ua: ua}, nil
}

// ReadTokenFile returns the first token of a token file (one a line, blank
// lines and # comments ignored).
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return t, nil
		}
	}
	return "", fmt.Errorf("token file %s: no token", path)
}

// Job is what Execute and Test share.
type Job struct {
	Image string
	// Files are placed under /work (path → content). Give Files or Snapshot.
	Files map[string][]byte
	// Snapshot is an uncompressed tar stream of a directory, sent as binary.
	Snapshot io.Reader
	Stdin    []byte
	Env      map[string]string
	Workdir  string
	// Limits: zero fields take the server's defaults.
	Limits sandbox.Limits
	// OnOutput, when set, receives output as the job writes it (the call
	// asks for an NDJSON stream). It is called from one goroutine.
	OnOutput func(stream sandbox.Stream, data []byte)
}

// ExecuteOptions describe one command to run.
type ExecuteOptions struct {
	Argv []string
	Job
}

// ExecuteResult is a finished run.
type ExecuteResult struct {
	RunID  string
	Result sandbox.Result
	Wire   sandbox.WireResult
}

// TestOptions describe a test run: Command (empty: detected by the server)
// and, for a custom command, how to read its report.
type TestOptions struct {
	Command []string
	Report  *sandboxapi.ReportRequest
	Job
}

// TestResult is a finished test run with its parsed summary.
type TestResult struct {
	RunID   string
	Result  sandbox.Result
	Wire    sandbox.WireResult
	Command []string
	Tests   testrun.Summary
}

// Execute runs a command in a fresh sandbox on the server. When the run
// itself failed after it started (err wraps sandbox.ErrUnavailable, say), the
// result is returned too, with what the job wrote before.
func (c *Client) Execute(ctx context.Context, o ExecuteOptions) (ExecuteResult, error) {
	req, err := jobRequest(o.Job)
	if err != nil {
		return ExecuteResult{}, err
	}
	var out sandbox.WireResult
	runID, err := c.run(ctx, sandboxapi.RouteExecute, sandboxapi.ExecuteRequest{Argv: o.Argv, JobRequest: req}, o.Job, &out)
	if err != nil && out.ID == "" {
		return ExecuteResult{RunID: runID}, err
	}
	res, cerr := out.Result()
	if cerr != nil && err == nil {
		err = fmt.Errorf("decode result: %w", cerr)
	}
	return ExecuteResult{RunID: runID, Result: res, Wire: out}, err
}

// Test runs a project's tests in a fresh sandbox on the server.
func (c *Client) Test(ctx context.Context, o TestOptions) (TestResult, error) {
	req, err := jobRequest(o.Job)
	if err != nil {
		return TestResult{}, err
	}
	var out sandboxapi.TestResponse
	runID, err := c.run(ctx, sandboxapi.RouteTest, sandboxapi.TestRequest{Command: o.Command, Report: o.Report, JobRequest: req}, o.Job, &out)
	if err != nil && out.ID == "" {
		return TestResult{RunID: runID}, err
	}
	res, cerr := out.WireResult.Result()
	if cerr != nil && err == nil {
		err = fmt.Errorf("decode result: %w", cerr)
	}
	return TestResult{RunID: runID, Result: res, Wire: out.WireResult, Command: out.Command, Tests: out.Tests}, err
}

// Ready is what /readyz reports.
type Ready struct {
	Status        string `json:"status"`
	Runtime       string `json:"runtime"`
	Image         string `json:"image"`
	ImageDigest   string `json:"image_digest"`
	Running       int    `json:"running"`
	Queued        int    `json:"queued"`
	MaxConcurrent int    `json:"max_concurrent"`
	QueueSize     int    `json:"queue_size"`
}

// Ready asks whether the server can run sandboxes now (engine reachable,
// default image present); an error wrapping sandbox.ErrUnavailable says no.
func (c *Client) Ready(ctx context.Context) (Ready, error) {
	var r Ready
	err := c.get(ctx, sandboxapi.RouteReady, &r)
	return r, err
}

// Health asks whether the server process is up.
func (c *Client) Health(ctx context.Context) error {
	var v map[string]string
	return c.get(ctx, sandboxapi.RouteHealth, &v)
}

func (c *Client) get(ctx context.Context, route string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(route), nil)
	if err != nil {
		return err
	}
	c.decorate(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", route, sandbox.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiError(resp)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(out)
}

func (c *Client) url(route string) string {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + route
	return u.String()
}

func (c *Client) decorate(req *http.Request) {
	req.Header.Set("User-Agent", c.ua)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// run posts a job and decodes its result into out, from a JSON body or the
// last event of an NDJSON stream.
func (c *Client) run(ctx context.Context, route string, spec any, job Job, out any) (string, error) {
	req, err := c.newRunRequest(ctx, route, spec, job.Snapshot)
	if err != nil {
		return "", err
	}
	stream := job.OnOutput != nil
	if stream {
		req.Header.Set("Accept", sandboxapi.ContentTypeNDJSON)
	} else {
		req.Header.Set("Accept", sandboxapi.ContentTypeJSON)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "", fmt.Errorf("%s: %w: %v", route, sandbox.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	runID := resp.Header.Get(sandboxapi.HeaderRunID)
	if resp.StatusCode != http.StatusOK {
		return runID, apiError(resp)
	}
	body := io.LimitReader(resp.Body, maxResponseBytes)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), sandboxapi.ContentTypeNDJSON) {
		if err := json.NewDecoder(body).Decode(out); err != nil {
			return runID, fmt.Errorf("%s: decode response: %w", route, err)
		}
		return runID, nil
	}
	dec := json.NewDecoder(body)
	var runErr error
	for {
		var ev sandboxapi.Event
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return runID, context.Cause(ctx)
			}
			return runID, fmt.Errorf("%s: %w: the event stream ended without a result: %v", route, sandbox.ErrProtocol, err)
		}
		switch ev.Type {
		case sandboxapi.EventStdout:
			job.OnOutput(sandbox.Stdout, ev.Data)
		case sandboxapi.EventStderr:
			job.OnOutput(sandbox.Stderr, ev.Data)
		case sandboxapi.EventError:
			if ev.Error != nil {
				runErr = &APIError{Status: statusOfCode(ev.Error.Code), Code: ev.Error.Code, Message: ev.Error.Message}
			}
		case sandboxapi.EventResult:
			if err := json.Unmarshal(ev.Result, out); err != nil {
				return runID, fmt.Errorf("%s: decode result: %w", route, err)
			}
			return runID, runErr
		}
	}
}

// newRunRequest encodes the spec as JSON, or with a snapshot as a binary tar:
// application/x-tar with the spec in X-Aster-Spec when it is small, else
// multipart/form-data streamed through a pipe.
func (c *Client) newRunRequest(ctx context.Context, route string, spec any, snapshot io.Reader) (*http.Request, error) {
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var req *http.Request
	switch {
	case snapshot == nil:
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.url(route), bytes.NewReader(specJSON))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", sandboxapi.ContentTypeJSON)
	case len(specJSON) <= maxHeaderSpecBytes:
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.url(route), snapshot)
		if err != nil {
			return nil, err
		}
		req.ContentLength = knownLength(snapshot)
		req.Header.Set("Content-Type", sandboxapi.ContentTypeTar)
		req.Header.Set(sandboxapi.HeaderSpec, asciiJSON(specJSON))
	default:
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			err := mw.WriteField(sandboxapi.PartSpec, string(specJSON))
			if err == nil {
				var part io.Writer
				part, err = mw.CreateFormFile(sandboxapi.PartWorkspace, "workspace.tar")
				if err == nil {
					_, err = io.Copy(part, snapshot)
				}
			}
			if err == nil {
				err = mw.Close()
			}
			pw.CloseWithError(err)
		}()
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.url(route), pr)
		if err != nil {
			pr.Close()
			return nil, err
		}
		req.Header.Set("Content-Type", mw.FormDataContentType())
	}
	c.decorate(req)
	return req, nil
}

// knownLength returns how many bytes a seekable reader has left, or -1, so
// the server can refuse an oversized snapshot before it is sent.
func knownLength(r io.Reader) int64 {
	s, ok := r.(io.Seeker)
	if !ok {
		return -1
	}
	cur, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	end, err := s.Seek(0, io.SeekEnd)
	if err != nil {
		return -1
	}
	if _, err := s.Seek(cur, io.SeekStart); err != nil {
		return -1
	}
	return end - cur
}

// asciiJSON escapes every non-ASCII rune of a JSON document as \uXXXX, so
// it travels safely in an HTTP header.
func asciiJSON(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r < utf8.RuneSelf {
			sb.WriteByte(b[0])
		} else if r > 0xFFFF {
			r -= 0x10000
			fmt.Fprintf(&sb, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		} else {
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
		b = b[n:]
	}
	return sb.String()
}

// jobRequest turns typed options into the wire request.
func jobRequest(j Job) (sandboxapi.JobRequest, error) {
	if j.Snapshot != nil && len(j.Files) > 0 {
		return sandboxapi.JobRequest{}, fmt.Errorf("%w: give files or a snapshot, not both", sandbox.ErrInvalidSpec)
	}
	req := sandboxapi.JobRequest{Image: j.Image, Env: j.Env, Workdir: j.Workdir, Limits: wireLimits(j.Limits)}
	if len(j.Files) > 0 {
		req.Files = make(map[string]sandboxapi.File, len(j.Files))
		for name, b := range j.Files {
			if utf8.Valid(b) {
				req.Files[name] = sandboxapi.TextFile(string(b))
			} else {
				req.Files[name] = sandboxapi.BinaryFile(b)
			}
		}
	}
	if len(j.Stdin) > 0 {
		req.Stdin, req.StdinEncoding = sandbox.EncodeOutput(j.Stdin)
	}
	return req, nil
}

func wireLimits(l sandbox.Limits) sandboxapi.Limits {
	q := func(v int64, unit string) sandboxapi.Quantity {
		if v == 0 {
			return ""
		}
		return sandboxapi.Quantity(strconv.FormatInt(v, 10) + unit)
	}
	var cpus sandboxapi.Quantity
	if l.MilliCPUs != 0 {
		cpus = sandboxapi.Quantity(strconv.FormatFloat(float64(l.MilliCPUs)/1000, 'f', -1, 64))
	}
	return sandboxapi.Limits{
		Timeout:       q(l.TimeoutMS, "ms"),
		Memory:        q(l.MemoryBytes, ""),
		CPUs:          cpus,
		Pids:          q(l.Pids, ""),
		OutputLimit:   q(l.OutputBytes, ""),
		OutputCeiling: q(l.OutputCeilingBytes, ""),
		WorkdirSize:   q(l.WorkdirBytes, ""),
		TmpSize:       q(l.TmpBytes, ""),
	}
}

// APIError is an error answer of the server. It unwraps to the error class
// of its code, so errors.Is(err, sandbox.ErrBusy) works across the wire.
type APIError struct {
	Status  int
	Code    string
	Message string
	// RetryAfter is the server's Retry-After (429, 503), zero when absent.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("server answered %d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap returns the error class named by the code.
func (e *APIError) Unwrap() error {
	switch e.Code {
	case "invalid_spec":
		return sandbox.ErrInvalidSpec
	case "unknown_image":
		return sandbox.ErrUnknownImage
	case "too_large":
		return sandbox.ErrTooLarge
	case "busy":
		return sandbox.ErrBusy
	case "unavailable":
		return sandbox.ErrUnavailable
	case "unauthorized":
		return sandboxapi.ErrUnauthorized
	case "forbidden":
		return sandboxapi.ErrForbidden
	case "not_found":
		return sandboxapi.ErrNotFound
	case "method_not_allowed":
		return sandboxapi.ErrMethodNotAllowed
	case "unsupported_media_type":
		return sandboxapi.ErrMediaType
	case "request_timeout":
		return sandboxapi.ErrRequestTimeout
	}
	return nil
}

func apiError(resp *http.Response) error {
	e := &APIError{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode), Message: resp.Status}
	var body sandboxapi.ErrorBody
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body); err == nil && body.Error.Code != "" {
		e.Code, e.Message = body.Error.Code, body.Error.Message
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// statusOfCode gives an error event (which has no HTTP status of its own) the
// status its code would have had.
func statusOfCode(code string) int {
	status, _ := sandboxapi.StatusFor((&APIError{Code: code}).Unwrap())
	return status
}

// IsRetryable reports whether err is worth retrying later (busy, engine down).
func IsRetryable(err error) bool {
	return errors.Is(err, sandbox.ErrBusy) || errors.Is(err, sandbox.ErrUnavailable)
}

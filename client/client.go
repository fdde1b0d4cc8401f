// Package client is the Go client of Aster's sandbox API (`aster sandbox
// serve`): run a command or a project's tests in a fresh sandbox on a server.
// Calls take options and return a result; errors unwrap to the api error
// classes (api.ErrBusy, api.ErrInvalidSpec, ...), so callers decide by
// behaviour with errors.Is. It depends only on the standard library and
// package api.
package client

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

	"github.com/asterhq/aster/api"
)

// maxResponseBytes bounds what is read from one response.
const maxResponseBytes = 1 << 30

// maxHeaderSpecBytes is the largest spec sent in the X-Aster-Spec header;
// larger ones go as a multipart field.
const maxHeaderSpecBytes = 16 << 10

// ErrStreamEnded is returned when a streamed response ended before its
// result event (the connection broke, or the server went away).
var ErrStreamEnded = errors.New("the event stream ended without a result")

// Options configure a Client.
type Options struct {
	// BaseURL is the server, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Token is sent as a bearer token when set.
	Token string
	// HTTPClient is used for every call; nil is a client with no overall
	// timeout (runs can be long: bound them with the context).
	HTTPClient *http.Client
	// UserAgent is sent with every request (default "aster-client").
	UserAgent string
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
		ua = "aster-client"
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
	// Image must be on the server's allowlist; empty is its default image.
	Image string
	// Files are placed under /work (path → content). Give Files or Snapshot.
	Files map[string][]byte
	// Snapshot is an uncompressed tar stream of a directory, sent as binary.
	Snapshot io.Reader
	// Stdin is the command's standard input.
	Stdin []byte
	// Env is the command's whole environment (the server adds PATH, HOME
	// and LANG defaults).
	Env map[string]string
	// Workdir is relative to /work.
	Workdir string
	// Limits in human units ("30s", "512m"); fields left empty take the
	// server's defaults.
	Limits api.Limits
	// OnOutput, when set, receives output as the job writes it (the call
	// asks for an NDJSON stream). It is called from one goroutine.
	OnOutput func(stream api.Stream, data []byte)
}

// ExecuteOptions describe one command to run.
type ExecuteOptions struct {
	// Argv is executed directly, with no shell.
	Argv []string
	Job
}

// ExecuteResult is a finished run.
type ExecuteResult struct {
	// RunID names the run (the X-Aster-Run-Id header); it is set as soon as
	// the server started one, even when the call then failed.
	RunID string
	// Result is the run's result as the server sent it.
	Result api.Result
	// Stdout and Stderr are Result's kept output, decoded.
	Stdout, Stderr []byte
}

// TestOptions describe a test run: Command (empty: detected by the server)
// and, for a custom command, how to read its report.
type TestOptions struct {
	Command []string
	Report  *api.ReportRequest
	Job
}

// TestResult is a finished test run with its parsed summary.
type TestResult struct {
	ExecuteResult
	// Command is the command that ran (detected or given).
	Command []string
	// Tests is what the run's report said.
	Tests api.TestSummary
}

// Execute runs a command in a fresh sandbox on the server. When the run
// itself failed after it started (err wraps api.ErrUnavailable, say), the
// result is returned too, with what the job wrote before.
func (c *Client) Execute(ctx context.Context, o ExecuteOptions) (ExecuteResult, error) {
	req, err := jobRequest(o.Job)
	if err != nil {
		return ExecuteResult{}, err
	}
	var out api.Result
	runID, err := c.run(ctx, api.RouteExecute, api.ExecuteRequest{Argv: o.Argv, JobRequest: req}, o.Job, &out)
	return finished(runID, out, err)
}

// Test runs a project's tests in a fresh sandbox on the server.
func (c *Client) Test(ctx context.Context, o TestOptions) (TestResult, error) {
	req, err := jobRequest(o.Job)
	if err != nil {
		return TestResult{}, err
	}
	var out api.TestResponse
	runID, err := c.run(ctx, api.RouteTest, api.TestRequest{Command: o.Command, Report: o.Report, JobRequest: req}, o.Job, &out)
	res, err := finished(runID, out.Result, err)
	if out.ID == "" {
		return TestResult{ExecuteResult: res}, err
	}
	return TestResult{ExecuteResult: res, Command: out.Command, Tests: out.Tests}, err
}

// finished decodes a run's output; a result that never came back (out.ID
// empty) leaves only the run id.
func finished(runID string, out api.Result, err error) (ExecuteResult, error) {
	if err != nil && out.ID == "" {
		return ExecuteResult{RunID: runID}, err
	}
	res := ExecuteResult{RunID: runID, Result: out}
	var derr error
	if res.Stdout, derr = out.Output(api.Stdout); derr == nil {
		res.Stderr, derr = out.Output(api.Stderr)
	}
	if derr != nil && err == nil {
		err = fmt.Errorf("decode result: %w", derr)
	}
	return res, err
}

// ValidateOptions is a POST /v1/validate request: the server's static-analysis
// gate over a repository snapshot.
type ValidateOptions struct {
	// Snapshot is an uncompressed tar stream of the repository (required).
	Snapshot io.Reader
	// Analyzers names the analyzers to run; empty runs all the server has.
	Analyzers []string
	// ChangedFiles, when not nil, limits file-list analyzers to these paths
	// and marks findings by whether they lie in one (Finding.Reported).
	ChangedFiles []string
}

// Validate runs the gate's analyzers over a snapshot on the server. An
// analyzer that could not run says so in its AnalyzerResult; that is not an
// error.
func (c *Client) Validate(ctx context.Context, o ValidateOptions) (api.ValidateResult, error) {
	if o.Snapshot == nil {
		return api.ValidateResult{}, fmt.Errorf("%w: validate needs a snapshot", api.ErrInvalidSpec)
	}
	var out api.ValidateResult
	_, err := c.run(ctx, api.RouteValidate, api.ValidateRequest{Analyzers: o.Analyzers, ChangedFiles: o.ChangedFiles}, Job{Snapshot: o.Snapshot}, &out)
	return out, err
}

// Ready asks whether the server can run sandboxes now (engine reachable,
// default image present); an error wrapping api.ErrUnavailable says no.
func (c *Client) Ready(ctx context.Context) (api.Ready, error) {
	var r api.Ready
	err := c.get(ctx, api.RouteReady, &r)
	return r, err
}

// Health asks whether the server process is up.
func (c *Client) Health(ctx context.Context) error {
	var v map[string]string
	return c.get(ctx, api.RouteHealth, &v)
}

func (c *Client) get(ctx context.Context, route string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(route), nil)
	if err != nil {
		return err
	}
	c.decorate(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", route, api.ErrUnavailable, err)
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
	stream := job.OnOutput != nil
	if stream {
		route = streamRoute(route)
	}
	req, err := c.newRunRequest(ctx, route, spec, job.Snapshot)
	if err != nil {
		return "", err
	}
	if stream {
		req.Header.Set("Accept", api.ContentTypeNDJSON)
	} else {
		req.Header.Set("Accept", api.ContentTypeJSON)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "", fmt.Errorf("%s: %w: %v", route, api.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	runID := resp.Header.Get(api.HeaderRunID)
	if resp.StatusCode != http.StatusOK {
		return runID, apiError(resp)
	}
	body := io.LimitReader(resp.Body, maxResponseBytes)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), api.ContentTypeNDJSON) {
		if err := json.NewDecoder(body).Decode(out); err != nil {
			return runID, fmt.Errorf("%s: decode response: %w", route, err)
		}
		return runID, nil
	}
	dec := json.NewDecoder(body)
	var runErr error
	for {
		var ev api.Event
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return runID, context.Cause(ctx)
			}
			return runID, fmt.Errorf("%s: %w: %v", route, ErrStreamEnded, err)
		}
		switch ev.Type {
		case api.EventStdout:
			job.OnOutput(api.Stdout, ev.Data)
		case api.EventStderr:
			job.OnOutput(api.Stderr, ev.Data)
		case api.EventError:
			if ev.Error != nil {
				runErr = &APIError{Status: statusOfCode(ev.Error.Code), Code: ev.Error.Code, Message: ev.Error.Message}
			}
		case api.EventResult:
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
		req.Header.Set("Content-Type", api.ContentTypeJSON)
	case len(specJSON) <= maxHeaderSpecBytes:
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.url(route), snapshot)
		if err != nil {
			return nil, err
		}
		req.ContentLength = knownLength(snapshot)
		req.Header.Set("Content-Type", api.ContentTypeTar)
		req.Header.Set(api.HeaderSpec, asciiJSON(specJSON))
	default:
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			err := mw.WriteField(api.PartSpec, string(specJSON))
			if err == nil {
				var part io.Writer
				part, err = mw.CreateFormFile(api.PartWorkspace, "workspace.tar")
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
func jobRequest(j Job) (api.JobRequest, error) {
	if j.Snapshot != nil && len(j.Files) > 0 {
		return api.JobRequest{}, fmt.Errorf("%w: give files or a snapshot, not both", api.ErrInvalidSpec)
	}
	req := api.JobRequest{Image: j.Image, Env: j.Env, Workdir: j.Workdir, Limits: j.Limits}
	if len(j.Files) > 0 {
		req.Files = make(map[string]api.File, len(j.Files))
		for name, b := range j.Files {
			if utf8.Valid(b) {
				req.Files[name] = api.TextFile(string(b))
			} else {
				req.Files[name] = api.BinaryFile(b)
			}
		}
	}
	if len(j.Stdin) > 0 {
		req.Stdin, req.StdinEncoding = api.EncodeText(j.Stdin)
	}
	return req, nil
}

// APIError is an error answer of the server. It unwraps to the error class
// of its code, so errors.Is(err, api.ErrBusy) works across the wire.
type APIError struct {
	// Status is the HTTP status; for an error event of a stream (which has
	// none), the status its code would have had.
	Status int
	// Code and Message are the error body's (api.ErrorDetail).
	Code    string
	Message string
	// RetryAfter is the server's Retry-After (429, 503), zero when absent.
	RetryAfter time.Duration
}

// Error says what the server answered.
func (e *APIError) Error() string {
	return fmt.Sprintf("server answered %d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap returns the error class named by the code (nil for a code this
// client does not know).
func (e *APIError) Unwrap() error { return api.ErrorClass(e.Code) }

func apiError(resp *http.Response) error {
	e := &APIError{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode), Message: resp.Status}
	var body api.ErrorBody
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
func statusOfCode(code string) int { return api.HTTPStatus(code) }

// IsRetryable reports whether err is worth retrying later (busy, engine down).
func IsRetryable(err error) bool {
	return errors.Is(err, api.ErrBusy) || errors.Is(err, api.ErrUnavailable)
}

// streamRoute is the route answering route's requests as an event stream.
func streamRoute(route string) string {
	switch route {
	case api.RouteExecute:
		return api.RouteExecuteStream
	case api.RouteTest:
		return api.RouteTestStream
	}
	return route
}

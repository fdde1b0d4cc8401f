package sandboxapi

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// validatorFunc is a Validator in one function.
type validatorFunc func(context.Context, gate.ValidateInput) (gate.ValidateResponse, error)

func (f validatorFunc) Validate(ctx context.Context, in gate.ValidateInput) (gate.ValidateResponse, error) {
	return f(ctx, in)
}

// /v1/validate end to end: the real gate runs an analyzer in a real sandbox
// over the uploaded snapshot; the transport's refusals are JSON errors.
func TestValidate(t *testing.T) {
	t.Parallel()
	const sarif = `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t"}},"results":[` +
		`{"ruleId":"R1","message":{"text":"first"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"f00000"},"region":{"startLine":1}}}]},` +
		`{"ruleId":"R2","message":{"text":"second"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"f00001"},"region":{"startLine":1}}}]}]}]}`
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		runner := gate.NewRunner(o.Manager, gate.RunnerOptions{Image: sandboxtest.Image()})
		o.Validator = gate.NewValidator(runner, []gate.Analyzer{{
			Name: "sarif-echo", Format: finding.FormatSARIF,
			// It sees the snapshot: the findings are printed only when f00001 is there.
			Command: []string{"sh", "-c", "test -f f00001 && printf '%s' '" + sarif + "'"},
		}})
	}})
	archive := manyFiles(t, 2, 8)
	resp, body := h.do(t.Context(), http.MethodPost, api.RouteValidate, api.ContentTypeTar, bytes.NewReader(archive),
		api.HeaderSpec, `{"changed_files":["f00000"]}`)
	out := decodeOK[gate.ValidateResponse](t, resp, body)
	if len(out.Analyzers) != 1 || out.Analyzers[0].Status != gate.StatusOK || out.Summary.Total != 2 || out.Summary.Reported != 1 {
		t.Fatalf("analyzers %+v summary %+v", out.Analyzers, out.Summary)
	}
	for _, f := range out.Findings {
		if f.Reported != (f.Path == "f00000") {
			t.Errorf("finding %s reported=%v", f.Path, f.Reported)
		}
	}
	for _, c := range []struct {
		name, ct, spec string
		body           []byte
		status         int
		code, msg      string
	}{
		{"no snapshot", api.ContentTypeJSON, "", []byte(`{}`), 400, "invalid_spec", "snapshot is required"},
		{"unknown analyzer", api.ContentTypeTar, `{"analyzers":["nope"]}`, archive, 400, "invalid_spec", "unknown analyzer"},
		{"bad spec field", api.ContentTypeTar, `{"analyzerz":[]}`, archive, 400, "invalid_spec", "analyzerz"},
		{"hostile tar", api.ContentTypeTar, `{}`, []byte(strings.Repeat("x", 1024)), 400, "invalid_spec", ""},
		{"media type", "text/plain", "", []byte("hi"), 415, "unsupported_media_type", ""},
	} {
		var hdr []string
		if c.spec != "" {
			hdr = []string{api.HeaderSpec, c.spec}
		}
		resp, body := h.do(t.Context(), http.MethodPost, api.RouteValidate, c.ct, bytes.NewReader(c.body), hdr...)
		if d := errorOf(t, resp, body, c.status, c.code); !strings.Contains(d.Message, c.msg) {
			t.Errorf("%s: message %q does not say %q", c.name, d.Message, c.msg)
		}
	}
}

// /v1/validate takes the same upload admission as /v1/execute: while one
// client's snapshot upload holds its upload slot, its next upload is refused
// with 429 on either route, before the validator is reached.
func TestValidateAdmission(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	h := newHarness(t, harnessOpts{maxConcurrent: 1, queue: 1, server: func(o *Options) {
		o.Validator = validatorFunc(func(context.Context, gate.ValidateInput) (gate.ValidateResponse, error) {
			calls.Add(1)
			return gate.ValidateResponse{Findings: []gate.Marked{}, Summary: gate.Summarize(nil), Analyzers: []gate.AnalyzerResult{}}, nil
		})
	}})
	archive := manyFiles(t, 1, 64)
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The held upload is a validate one: it takes the client's slot too.
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n%s: {}\r\nContent-Length: %d\r\n\r\n",
		api.RouteValidate, api.ContentTypeTar, api.HeaderSpec, len(archive))
	if _, err := conn.Write(archive[:1]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the held upload to take its slot", func() bool { return len(h.srv.uploads) == 1 })
	for route, spec := range map[string]string{api.RouteExecute: `{"argv":["true"]}`, api.RouteValidate: `{}`} {
		resp, body := h.do(t.Context(), http.MethodPost, route, api.ContentTypeTar, bytes.NewReader(archive), api.HeaderSpec, spec)
		errorOf(t, resp, body, http.StatusTooManyRequests, "busy")
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 429 without Retry-After", route)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the validator ran %d times past a refused admission", n)
	}
	if got := h.metric(`aster_sandbox_rejected_total{reason="client_uploads"}`); got != 2 {
		t.Errorf("client_uploads refusals counted: %v, want 2", got)
	}
	conn.Close()
	waitFor(t, 10*time.Second, "the held slot to be released", func() bool { return len(h.srv.uploads) == 0 })
	resp, body := h.do(t.Context(), http.MethodPost, api.RouteValidate, api.ContentTypeTar, bytes.NewReader(archive), api.HeaderSpec, `{}`)
	if resp.StatusCode != http.StatusOK || calls.Load() != 1 {
		t.Errorf("validate after the slot was free: %d %s (validator ran %d times)", resp.StatusCode, body, calls.Load())
	}
}

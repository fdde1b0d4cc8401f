package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/testkit"
)

// syncBuffer collects the server's log lines while the test reads them.
type syncBuffer struct{ testkit.SyncBuffer }

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(s.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// A refused request is logged with the error code its client got; a successful one has none.
func TestRefusalsAreLoggedWithTheirCode(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}})
	ctx := context.Background()
	// What each refusal told its client, by "route status".
	want := map[string]string{}
	for _, req := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/nosuch", ""},
		{http.MethodPost, api.RouteHealth, `{}`},
		{http.MethodPost, api.RouteExecute, `{"argv":[]}`},
	} {
		resp, body := h.do(ctx, req.method, req.path, api.ContentTypeJSON, strings.NewReader(req.body))
		var eb api.ErrorBody
		if err := json.Unmarshal(body, &eb); err != nil || resp.StatusCode < 400 || eb.Error.Code == "" {
			t.Fatalf("%s %s: %d %s", req.method, req.path, resp.StatusCode, body)
		}
		want[routeOf(req.path)+" "+jsonNum(resp.StatusCode)] = eb.Error.Code
	}
	h.do(ctx, http.MethodGet, api.RouteHealth, "", nil)
	got := map[string]string{}
	for _, rec := range logs.records(t) {
		if rec["msg"] != "request" {
			continue
		}
		code, _ := rec["code"].(string)
		got[rec["route"].(string)+" "+jsonNum(rec["status"])] = code
	}
	if len(want) != 3 {
		t.Fatalf("want three distinct refusals: %v", want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("request %s logged with code %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if c, ok := got["/healthz 200"]; !ok || c != "" {
		t.Errorf("a 200 is logged with code %q (present %v)", c, ok)
	}
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Every /v1/validate run carries a run id of its own: in the answer's header and in the
// request's log line, as runs of /v1/execute do.
func TestValidateRunsCarryARunID(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		o.Validator = validatorFunc(func(context.Context, gate.ValidateInput) (gate.ValidateResponse, error) {
			return gate.ValidateResponse{Findings: []gate.Marked{}, Summary: gate.Summarize(nil), Analyzers: []gate.AnalyzerResult{}}, nil
		})
	}})
	archive := manyFiles(t, 1, 16)
	ids := map[string]bool{}
	for range 2 {
		resp, body := h.do(t.Context(), http.MethodPost, api.RouteValidate, api.ContentTypeTar, bytes.NewReader(archive), api.HeaderSpec, `{}`)
		id := resp.Header.Get(api.HeaderRunID)
		if resp.StatusCode != 200 || id == "" || ids[id] {
			t.Fatalf("validate: %d %s, run id %q (seen %v)", resp.StatusCode, body, id, ids)
		}
		ids[id] = true
	}
	for _, rec := range logs.records(t) {
		if rec["msg"] == "request" && rec["route"] == api.RouteValidate {
			delete(ids, rec["run"].(string))
		}
	}
	if len(ids) != 0 {
		t.Errorf("run ids not in the request log: %v", ids)
	}
}

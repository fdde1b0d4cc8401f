package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/api/openapi"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/openapitest"
)

// The description describes exactly the routes the server answers, with
// their methods and whether they take the token.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	spec := apiSpec(t)
	described := spec.Paths()
	for _, rt := range Routes() {
		methods := slices.Sorted(slices.Values(rt.Methods))
		if got := described[rt.Path]; !slices.Equal(got, methods) {
			t.Errorf("%s: the server takes %v, the description has %v", rt.Path, methods, got)
		}
		for _, m := range rt.Methods {
			if op, ok := spec.Operation(m, rt.Path); ok && op.Auth != rt.Auth {
				t.Errorf("%s %s: the server's auth is %v, the description's bearerAuth %v", m, rt.Path, rt.Auth, op.Auth)
			}
		}
		delete(described, rt.Path)
	}
	for path := range described {
		t.Errorf("the description has %s, which the server does not answer", path)
	}
}

// GET /openapi.json serves the file byte for byte, without a token even on a
// server that has tokens; other methods get 405.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	toks, err := ParseTokens(strings.NewReader("token-for-the-openapi-test\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{server: func(o *Options) { o.Tokens = toks }})
	resp, body := h.do(context.Background(), http.MethodGet, api.RouteOpenAPI, "", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != api.ContentTypeJSON {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.Equal(body, openapi.JSON()) {
		t.Errorf("the served description (%d bytes) is not api/openapi/openapi.json (%d bytes)", len(body), len(openapi.JSON()))
	}
	resp, body = h.do(context.Background(), http.MethodPost, api.RouteOpenAPI, api.ContentTypeJSON, strings.NewReader("{}"))
	errorOf(t, resp, body, 405, "method_not_allowed")
	if resp.Header.Get("Allow") != "GET" {
		t.Errorf("Allow %q", resp.Header.Get("Allow"))
	}
}

// The number forms of the limits carry the absolute bounds of
// config.LimitBounds.
func TestOpenAPILimitBounds(t *testing.T) {
	t.Parallel()
	props := schemaAt(t, "Limits")["properties"].(map[string]any)
	b := config.LimitBounds()
	ms := func(v int64) float64 { return float64(v) / 1000 }
	n := func(v int64) float64 { return float64(v) }
	for name, want := range map[string][2]float64{
		"timeout":        {ms(b.Min.TimeoutMS), ms(b.Max.TimeoutMS)},
		"memory":         {n(b.Min.MemoryBytes), n(b.Max.MemoryBytes)},
		"cpus":           {ms(b.Min.MilliCPUs), ms(b.Max.MilliCPUs)},
		"pids":           {n(b.Min.Pids), n(b.Max.Pids)},
		"output_limit":   {n(b.Min.OutputBytes), n(b.Max.OutputBytes)},
		"output_ceiling": {n(b.Min.OutputCeilingBytes), n(b.Max.OutputCeilingBytes)},
		"workdir_size":   {n(b.Min.WorkdirBytes), n(b.Max.WorkdirBytes)},
		"tmp_size":       {n(b.Min.TmpBytes), n(b.Max.TmpBytes)},
	} {
		p, ok := props[name].(map[string]any)
		if !ok {
			t.Errorf("limits.%s is not described", name)
			continue
		}
		var got [2]float64
		for _, alt := range p["oneOf"].([]any) {
			a := alt.(map[string]any)
			if a["type"] == "number" || a["type"] == "integer" {
				got = [2]float64{a["minimum"].(float64), a["maximum"].(float64)}
			}
		}
		if got != want {
			t.Errorf("limits.%s: the description's bounds %v, config.LimitBounds %v", name, got, want)
		}
	}
	if len(props) != reflect.TypeFor[api.Limits]().NumField() {
		t.Errorf("the description has %d limits, the Limits type %d", len(props), reflect.TypeFor[api.Limits]().NumField())
	}
}

// The wire types and the schemas name the same fields, and the schemas
// require the fields the types always send.
func TestOpenAPIWireTypes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		schema string
		typ    reflect.Type
		sent   bool // the server sends it: what it always sends is required
	}{
		{"ExecuteRequest", reflect.TypeFor[api.ExecuteRequest](), false},
		{"TestRequest", reflect.TypeFor[api.TestRequest](), false},
		{"ReportRequest", reflect.TypeFor[api.ReportRequest](), false},
		{"Limits", reflect.TypeFor[api.Limits](), false},
		{"RunResult", reflect.TypeFor[api.Result](), true},
		{"TestSummary", reflect.TypeFor[api.TestSummary](), true},
		{"TestFailure", reflect.TypeFor[api.TestFailure](), true},
		{"InstallResult", reflect.TypeFor[api.InstallResult](), true},
		{"Downloads", reflect.TypeFor[api.Downloads](), true},
		{"ErrorDetail", reflect.TypeFor[api.ErrorDetail](), true},
		{"Error", reflect.TypeFor[api.ErrorBody](), true},
		{"OutputEvent", reflect.TypeFor[api.OutputEvent](), true},
		{"ErrorEvent", reflect.TypeFor[api.ErrorEvent](), true},
		{"Ready", reflect.TypeFor[api.Ready](), true},
		{"ValidateRequest", reflect.TypeFor[api.ValidateRequest](), false},
		{"ValidateResult", reflect.TypeFor[api.ValidateResult](), true},
		{"Finding", reflect.TypeFor[api.Finding](), true},
		{"Fix", reflect.TypeFor[api.Fix](), true},
		{"Replacement", reflect.TypeFor[api.Replacement](), true},
		{"FindingSummary", reflect.TypeFor[api.FindingSummary](), true},
		{"AnalyzerResult", reflect.TypeFor[api.AnalyzerResult](), true},
		{"SessionRequest", reflect.TypeFor[api.SessionRequest](), false},
		{"Session", reflect.TypeFor[api.Session](), true},
		{"SessionList", reflect.TypeFor[api.SessionList](), true},
		{"SessionExecRequest", reflect.TypeFor[api.SessionExecRequest](), false},
		{"TerminalResize", reflect.TypeFor[api.TerminalResize](), false},
		{"FileEntry", reflect.TypeFor[api.FileEntry](), true},
		{"FileList", reflect.TypeFor[api.FileList](), true},
	} {
		s := schemaAt(t, c.schema)
		props, _ := s["properties"].(map[string]any)
		var required []string
		req, _ := s["required"].([]any)
		for _, r := range req {
			required = append(required, r.(string))
		}
		fields, always := openapitest.JSONFields(c.typ)
		var described []string
		for p := range props {
			described = append(described, p)
		}
		slices.Sort(described)
		if !slices.Equal(described, fields) {
			t.Errorf("%s: the schema has %v, the Go type %v", c.schema, described, fields)
		}
		for _, f := range always {
			if c.sent && !slices.Contains(required, f) {
				t.Errorf("%s: %s is always sent but not required", c.schema, f)
			}
		}
	}
	// The multipart field names and the spec header are the description's.
	for _, name := range []string{"ExecuteMultipart", "TestMultipart", "ValidateMultipart"} {
		props := schemaAt(t, name)["properties"].(map[string]any)
		if props[api.PartSpec] == nil || props[api.PartWorkspace] == nil || len(props) != 2 {
			t.Errorf("%s parts %v, want %s and %s", name, props, api.PartSpec, api.PartWorkspace)
		}
	}
	params := apiSpec(t).Doc["components"].(map[string]any)["parameters"].(map[string]any)
	for name, p := range params {
		if got := p.(map[string]any)["name"]; got != api.HeaderSpec {
			t.Errorf("parameter %s names %v, want %s", name, got, api.HeaderSpec)
		}
	}
}

func schemaAt(t *testing.T, name string) map[string]any {
	t.Helper()
	s, ok := apiSpec(t).Doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
	if !ok {
		t.Fatalf("no schema %s", name)
	}
	// Through JSON, so numbers are float64 whatever the decoder kept.
	b, _ := json.Marshal(s)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

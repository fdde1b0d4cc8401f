package gate

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/workspace"
)

func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	m := map[string][]byte{}
	for k, v := range files {
		m[k] = []byte(v)
	}
	var buf bytes.Buffer
	if _, err := workspace.PackFiles(m, &buf, workspace.Caps{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func newTestHandler(t *testing.T, fake *fakeSandbox) http.Handler {
	analyzers := []Analyzer{
		{Name: "sarif-tool", Command: []string{"sarif-tool", "{files}"}, Format: finding.FormatSARIF, Files: []string{"*.sh"}},
		{Name: "other", Command: []string{"other", "."}, Format: finding.FormatSARIF},
	}
	return NewHandler(HandlerOptions{
		Runner:    NewRunner(fake, RunnerOptions{}),
		Analyzers: analyzers,
		Body:      sandboxapi.BodyOptions{MaxBodyBytes: 1 << 20, WorkspaceMaxBytes: 1 << 20, TempDir: t.TempDir()},
	})
}

func TestValidateHandler(t *testing.T) {
	fake := newFake(func(spec sandbox.Spec) (sandbox.Result, error) {
		if spec.Argv[0] == "other" {
			return ok(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"o"}},"results":[{"ruleId":"X","message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"b.sh"},"region":{"startLine":1}}}]}]}]}`, 0), nil
		}
		return ok(oneSARIF, 0), nil
	})
	h := newTestHandler(t, fake)
	body := tarOf(t, map[string]string{"a.sh": "echo $1\n", "b.sh": "echo\n"})

	t.Run("x-tar with spec header", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "/v1/validate", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-tar")
		req.Header.Set(api.HeaderSpec, `{"analyzers":["sarif-tool","other"],"changed_files":["a.sh"]}`)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var resp ValidateResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Analyzers) != 2 || resp.Analyzers[0].Status != StatusOK || resp.Analyzers[0].TargetFiles != 1 {
			t.Errorf("analyzers %+v", resp.Analyzers)
		}
		if resp.Summary.Total != 2 || resp.Summary.Reported != 1 {
			t.Errorf("summary %+v (only a.sh is changed)", resp.Summary)
		}
		for _, f := range resp.Findings {
			if f.Reported != (f.Path == "a.sh") {
				t.Errorf("finding %s reported=%v", f.Path, f.Reported)
			}
		}
	})

	t.Run("multipart", func(t *testing.T) {
		var mp bytes.Buffer
		w := multipart.NewWriter(&mp)
		_ = w.WriteField("spec", `{"analyzers":["other"]}`)
		fw, _ := w.CreateFormFile("workspace", "snap.tar")
		_, _ = fw.Write(body)
		_ = w.Close()
		req := httptest.NewRequest(http.MethodPost, "/v1/validate", &mp)
		req.Header.Set("Content-Type", w.FormDataContentType())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"reported":true`) {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})

	errCases := []struct {
		name, ct, spec string
		body           []byte
		status         int
		code           string
	}{
		{"unknown analyzer", "application/x-tar", `{"analyzers":["nope"]}`, body, 400, "invalid_spec"},
		{"no snapshot", "application/json", `{}`, nil, 400, "invalid_spec"},
		{"bad spec field", "application/x-tar", `{"analyzerz":[]}`, body, 400, "invalid_spec"},
		{"hostile tar", "application/x-tar", `{}`, []byte(strings.Repeat("x", 1024)), 400, "invalid_spec"},
		{"too large", "application/x-tar", `{}`, make([]byte, 2<<20), 413, "too_large"},
		{"media type", "text/plain", ``, []byte("hi"), 415, "unsupported_media_type"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			var r *http.Request
			if c.ct == "application/json" {
				r = httptest.NewRequest(http.MethodPost, "/v1/validate", strings.NewReader(c.spec))
			} else {
				r = httptest.NewRequest(http.MethodPost, "/v1/validate", bytes.NewReader(c.body))
				if c.spec != "" {
					r.Header.Set(api.HeaderSpec, c.spec)
				}
			}
			r.Header.Set("Content-Type", c.ct)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			var e api.ErrorBody
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			if rec.Code != c.status || e.Error.Code != c.code {
				t.Errorf("status %d code %q, want %d %q: %s", rec.Code, e.Error.Code, c.status, c.code, rec.Body)
			}
		})
	}
}

package health

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Route, nil))
	var v map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || rec.Code != 200 || len(v) != 1 || v["status"] != "ok" ||
		rec.Header().Get("Content-Type") != ContentType {
		t.Fatalf("healthz: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
	rec = httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Route, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST healthz: %d", rec.Code)
	}
}

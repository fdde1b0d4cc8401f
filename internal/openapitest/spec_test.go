package openapitest

import (
	"archive/tar"
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

func mustLoad(t *testing.T) *Spec {
	t.Helper()
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func jsonHeader(kv ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

const okResult = `{"id":"r-1","status":"ok","exit_code":0,"signal":"","stdout":"hi\n","stdout_encoding":"utf-8","stdout_truncated":false,"stdout_bytes":3,"stdout_dropped_bytes":0,"stderr":"","stderr_encoding":"utf-8","stderr_truncated":false,"stderr_bytes":0,"stderr_dropped_bytes":0,"duration_ms":1,"cpu_ms":1,"peak_memory_bytes":1,"oom_killed":false,"runtime":"docker","image":"i","image_digest":"sha256:x","error":"","timings_ms":{"total":3}}`

// requestCase is a request and what CheckRequest must say of it.
type requestCase struct {
	name, method, path string
	h                  http.Header
	body               []byte
	invalid            string // "" when valid
}

func TestRequests(t *testing.T) {
	t.Parallel()
	s := mustLoad(t)
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	tw.WriteHeader(&tar.Header{Name: "a", Size: 1, Mode: 0o644})
	tw.Write([]byte("x"))
	tw.Close()
	multi := func(parts ...string) (string, []byte) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, p := range parts {
			if p == "workspace" {
				fw, _ := mw.CreateFormFile("workspace", "ws.tar")
				fw.Write(tarBuf.Bytes())
			} else {
				name, v, _ := strings.Cut(p, "=")
				mw.WriteField(name, v)
			}
		}
		mw.Close()
		return mw.FormDataContentType(), buf.Bytes()
	}
	cases := []requestCase{
		{"execute", "POST", "/v1/execute", jsonHeader(), []byte(`{"argv":["true"],"files":{"a":"x","b":{"content":"AA==","encoding":"base64"}},"limits":{"timeout":"5s","memory":268435456,"cpus":0.5,"pids":"32"}}`), ""},
		{"bearer", "POST", "/v1/execute", jsonHeader("Authorization", "Bearer abc"), []byte(`{"argv":["true"]}`), ""},
		{"no scheme", "POST", "/v1/execute", jsonHeader("Authorization", "abc"), []byte(`{"argv":["true"]}`), "bearer"},
		{"unknown field", "POST", "/v1/execute", jsonHeader(), []byte(`{"argv":["true"],"network":true}`), "network"},
		{"no argv", "POST", "/v1/execute", jsonHeader(), []byte(`{}`), "argv"},
		{"pids too many", "POST", "/v1/execute", jsonHeader(), []byte(`{"argv":["true"],"limits":{"pids":99999999999}}`), "maximum"},
		{"negative memory", "POST", "/v1/execute", jsonHeader(), []byte(`{"argv":["true"],"limits":{"memory":-5}}`), "minimum"},
		{"form", "POST", "/v1/execute", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, []byte(`a=b`), "not one the operation takes"},
		{"tar", "POST", "/v1/test", http.Header{"Content-Type": {"application/x-tar"}, "X-Aster-Spec": {`{"limits":{"timeout":"2m"}}`}}, tarBuf.Bytes(), ""},
		{"tar with files", "POST", "/v1/execute", http.Header{"Content-Type": {"application/x-tar"}, "X-Aster-Spec": {`{"argv":["ls"],"files":{"a":"b"}}`}}, tarBuf.Bytes(), "X-Aster-Spec"},
		{"not a tar", "POST", "/v1/validate", http.Header{"Content-Type": {"application/x-tar"}}, []byte(strings.Repeat("x", 1024)), "tar"},
		{"validate json", "POST", "/v1/validate", jsonHeader(), []byte(`{}`), "not one the operation takes"},
		{"healthz", "GET", "/healthz", http.Header{}, nil, ""},
		{"healthz with a token", "GET", "/healthz", http.Header{"Authorization": {"Bearer abc"}}, nil, ""},
		{"unknown path", "GET", "/v2/execute", http.Header{}, nil, "no GET /v2/execute"},
	}
	for _, m := range []struct {
		name, path string
		parts      []string
		invalid    string
	}{
		{"multipart", "/v1/execute", []string{`spec={"argv":["ls"]}`, "workspace"}, ""},
		{"multipart order", "/v1/execute", []string{"workspace", `spec={"argv":["ls"]}`}, "comes after"},
		{"validate any order", "/v1/validate", []string{"workspace", `spec={"analyzers":["x"]}`}, ""},
		{"multipart extra part", "/v1/execute", []string{`spec={"argv":["ls"]}`, "workspace", "extra=1"}, "extra"},
	} {
		ct, body := multi(m.parts...)
		cases = append(cases, requestCase{m.name, "POST", m.path, http.Header{"Content-Type": {ct}}, body, m.invalid})
	}
	for _, c := range cases {
		got := s.CheckRequest(c.method, c.path, c.h, c.body)
		switch {
		case c.invalid == "" && got.Invalid != "":
			t.Errorf("%s: refused: %s", c.name, got.Invalid)
		case c.invalid != "" && !strings.Contains(got.Invalid, c.invalid):
			t.Errorf("%s: Invalid = %q, want it to mention %q", c.name, got.Invalid, c.invalid)
		}
	}
}

func TestResponses(t *testing.T) {
	t.Parallel()
	s := mustLoad(t)
	valid := s.CheckRequest("POST", "/v1/execute", jsonHeader(), []byte(`{"argv":["true"]}`))
	invalid := s.CheckRequest("POST", "/v1/execute", jsonHeader(), []byte(`{"argv":["true"],"nope":1}`))
	stream := s.CheckRequest("POST", "/v1/execute/stream", jsonHeader(), []byte(`{"argv":["true"]}`))
	run := http.Header{"Content-Type": {"application/json"}, "X-Aster-Run-Id": {"r-1"}}
	nd := http.Header{"Content-Type": {"application/x-ndjson"}, "X-Aster-Run-Id": {"r-1"}}
	out := `{"type":"stdout","data":"hi\n","encoding":"utf-8"}` + "\n"
	res := `{"type":"result",` + okResult[1:] + "\n"
	errEv := `{"type":"error","error":{"code":"unavailable","message":"gone"}}` + "\n"
	cases := []struct {
		name   string
		req    Request
		status int
		h      http.Header
		body   string
		want   string // "" when it must pass
	}{
		{"result", valid, 200, run, okResult, ""},
		{"result without run id", valid, 200, jsonHeader(), okResult, "X-Aster-Run-Id"},
		{"result missing a field", valid, 200, run, strings.Replace(okResult, `"cpu_ms":1,`, "", 1), "cpu_ms"},
		{"result with an extra field", valid, 200, run, strings.Replace(okResult, `"cpu_ms":1,`, `"cpu_ms":1,"extra":1,`, 1), "extra"},
		{"bad status value", valid, 200, run, strings.Replace(okResult, `"status":"ok"`, `"status":"fine"`, 1), "status"},
		{"undeclared status", valid, 418, jsonHeader(), `{"error":{"code":"internal","message":"x"}}`, "declares no 418"},
		{"accepted invalid", invalid, 200, run, okResult, "accepted a request the description refuses"},
		{"refused invalid", invalid, 400, jsonHeader(), `{"error":{"code":"invalid_spec","message":"x"}}`, ""},
		{"code of another status", invalid, 400, jsonHeader(), `{"error":{"code":"busy","message":"x"}}`, "code"},
		{"busy without Retry-After", valid, 429, jsonHeader(), `{"error":{"code":"busy","message":"x"}}`, "Retry-After"},
		{"busy", valid, 429, jsonHeader("Retry-After", "3"), `{"error":{"code":"busy","message":"x"}}`, ""},
		{"internal leaks", valid, 500, jsonHeader(), `{"error":{"code":"internal","message":"dial /var/run/docker.sock"}}`, "message"},
		{"401 without WWW-Authenticate", valid, 401, jsonHeader(), `{"error":{"code":"unauthorized","message":"x"}}`, "WWW-Authenticate"},
		{"wrong content type", valid, 200, http.Header{"Content-Type": {"text/html"}, "X-Aster-Run-Id": {"r"}}, okResult, "text/html"},
		{"stream", stream, 200, nd, out + out + errEv + res, ""},
		{"stream without result", stream, 200, nd, out, "without a result"},
		{"stream after result", stream, 200, nd, out + res + out, "after the result"},
		{"output after error", stream, 200, nd, errEv + out + res, "after the error"},
		{"stream on the plain route", valid, 200, nd, out + res, "not declared"},
		{"result on the stream route", stream, 200, run, okResult, "not declared"},
		{"bad event", stream, 200, nd, `{"type":"stdout","data":"x"}` + "\n" + res, "encoding"},
		{"unknown route", Request{Method: "GET", Path: "/v2/x"}, 404, jsonHeader(), `{"error":{"code":"not_found","message":"x"}}`, ""},
		{"unknown route 200", Request{Method: "GET", Path: "/v2/x"}, 200, jsonHeader(), `{}`, "404"},
		{"method", Request{Method: "GET", Path: "/v1/execute"}, 405, jsonHeader("Allow", "POST"), `{"error":{"code":"method_not_allowed","message":"x"}}`, ""},
		{"method wrong Allow", Request{Method: "POST", Path: "/healthz"}, 405, jsonHeader("Allow", "POST"), `{"error":{"code":"method_not_allowed","message":"x"}}`, "Allow"},
		{"method right Allow", Request{Method: "POST", Path: "/healthz"}, 405, jsonHeader("Allow", "GET, HEAD"), `{"error":{"code":"method_not_allowed","message":"x"}}`, ""},
		{"metrics", s.CheckRequest("GET", "/metrics", http.Header{}, nil), 200, http.Header{"Content-Type": {"text/plain; version=0.0.4; charset=utf-8"}}, "# HELP x\n", ""},
		{"head healthz", s.CheckRequest("HEAD", "/healthz", http.Header{}, nil), 200, jsonHeader(), "", ""},
	}
	for _, c := range cases {
		err := s.CheckResponse(c.req, c.status, c.h, []byte(c.body))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

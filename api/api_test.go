package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/asterhq/aster/internal/testkit"
)

// Every code names its class and back, and answers with its own status.
func TestErrorClasses(t *testing.T) {
	want := map[string]int{
		CodeInvalidSpec: 400, CodeUnknownImage: 400, CodeTooLarge: 413, CodeBusy: 429, CodeUnavailable: 503,
		CodeUnauthorized: 401, CodeForbidden: 403, CodeNotFound: 404, CodeMethodNotAllowed: 405,
		CodeMediaType: 415, CodeRequestTimeout: 408,
	}
	for code, status := range want {
		class := ErrorClass(code)
		if class == nil {
			t.Fatalf("%s has no class", code)
		}
		wrapped := fmt.Errorf("outer: %w", fmt.Errorf("%w: detail", class))
		if got := ErrorCode(wrapped); got != code {
			t.Errorf("ErrorCode(%v) = %s, want %s", wrapped, got, code)
		}
		if got := HTTPStatus(code); got != status {
			t.Errorf("HTTPStatus(%s) = %d, want %d", code, got, status)
		}
	}
	if ErrorCode(errors.New("anything")) != CodeInternal || ErrorCode(nil) != CodeInternal {
		t.Error("an unclassified error is not internal")
	}
	if ErrorClass("no_such_code") != nil || HTTPStatus("no_such_code") != http.StatusInternalServerError {
		t.Error("an unknown code has a class or a status")
	}
}

func TestEventDecode(t *testing.T) {
	lines := []string{
		`{"type":"stdout","data":"aGk=","encoding":"base64"}`,
		`{"type":"stderr","data":"é","encoding":"utf-8"}`,
		`{"type":"error","error":{"code":"unavailable","message":"engine gone"}}`,
		`{"type":"result","id":"r1","status":"ok","error":""}`,
	}
	var evs []Event
	for _, l := range lines {
		var ev Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		evs = append(evs, ev)
	}
	if string(evs[0].Data) != "hi" || string(evs[1].Data) != "é" || evs[2].Error.Code != CodeUnavailable {
		t.Errorf("events %+v", evs)
	}
	var res Result
	if err := json.Unmarshal(evs[3].Result, &res); err != nil || res.ID != "r1" || res.Status != StatusOK {
		t.Errorf("result %+v %v", res, err)
	}
	for _, bad := range []string{`{"type":"stdout","data":"!!","encoding":"base64"}`, `{"type":"error","error":"text"}`, `[`} {
		var ev Event
		if err := json.Unmarshal([]byte(bad), &ev); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

func TestResultOutput(t *testing.T) {
	var r Result
	r.Stdout, r.StdoutEncoding = EncodeText([]byte{0xff, 0})
	r.Stderr, r.StderrEncoding = EncodeText([]byte("text"))
	out, err := r.Output(Stdout)
	if err != nil || !bytes.Equal(out, []byte{0xff, 0}) || r.StdoutEncoding != EncodingBase64 {
		t.Errorf("stdout %q %v", out, err)
	}
	if errOut, err := r.Output(Stderr); err != nil || string(errOut) != "text" || r.StderrEncoding != EncodingUTF8 {
		t.Errorf("stderr %q %v", errOut, err)
	}
	r.StdoutEncoding = "rot13"
	if _, err := r.Output(Stdout); err == nil {
		t.Error("unknown encoding decoded")
	}
}

func TestRequestShapes(t *testing.T) {
	var req ExecuteRequest
	in := `{"argv":["true"],"files":{"a":"text","b":{"content":"AP8=","encoding":"base64"}},"limits":{"timeout":"5s","memory":268435456,"cpus":0.5}}`
	if err := json.Unmarshal([]byte(in), &req); err != nil {
		t.Fatal(err)
	}
	b, err := req.Files["b"].Bytes()
	if err != nil || !bytes.Equal(b, []byte{0, 0xff}) || req.Files["a"].Content != "text" {
		t.Errorf("files %+v %q %v", req.Files, b, err)
	}
	if req.Limits.Timeout != "5s" || req.Limits.Memory != "268435456" || req.Limits.CPUs != "0.5" {
		t.Errorf("limits %+v", req.Limits)
	}
	for _, bad := range []string{`{"limits":{"memory":true}}`, `{"files":{"a":{"content":"x","mode":1}}}`} {
		var r ExecuteRequest
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	out, _ := json.Marshal(ExecuteRequest{Argv: []string{"true"}})
	if string(out) != `{"argv":["true"]}` {
		t.Errorf("empty fields sent: %s", out)
	}
}

// FuzzEvent feeds stream lines to the decoder: it may refuse them, never panic,
// and an output event's data is always its decoded text.
func FuzzEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"stdout","data":"aGk=","encoding":"base64"}`, `{"type":"error","error":{"code":"busy"}}`,
		`{"type":"result","id":"x"}`, `{"type":"stderr","data":"\u00e9"}`, `{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ev Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return
		}
		if ev.Type == EventError && ev.Error == nil {
			t.Errorf("error event without error: %s", b)
		}
	})
}

// Of several unknown keys in a file object, the same one is named every time.
func TestFileNamesUnknownKeyInOneOrder(t *testing.T) {
	got := testkit.Same(t, func() string {
		var f File
		return fmt.Sprint(json.Unmarshal([]byte(`{"zz":1,"content":"x","mode":"0755","aa":2,"mm":3}`), &f))
	})
	if want := `json: unknown field "aa"`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

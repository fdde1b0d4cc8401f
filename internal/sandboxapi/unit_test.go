package sandboxapi

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
)

func TestStatusFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{sandbox.Invalidf("x"), 400, "invalid_spec"},
		{fmt.Errorf("wrap: %w", sandbox.ErrUnknownImage), 400, "unknown_image"},
		{fmt.Errorf("%w: body", sandbox.ErrTooLarge), 413, "too_large"},
		{sandbox.ErrBusy, 429, "busy"},
		{fmt.Errorf("docker: %w", sandbox.ErrUnavailable), 503, "unavailable"},
		{api.ErrUnauthorized, 401, "unauthorized"},
		{api.ErrForbidden, 403, "forbidden"},
		{api.ErrNotFound, 404, "not_found"},
		{api.ErrMethodNotAllowed, 405, "method_not_allowed"},
		{api.ErrRequestTimeout, 408, "request_timeout"},
		{api.ErrMediaType, 415, "unsupported_media_type"},
		{fmt.Errorf("%w: bad frame", sandbox.ErrProtocol), 500, "internal"},
		{errors.New("anything else"), 500, "internal"},
	}
	for _, c := range cases {
		if status, code := StatusFor(c.err); status != c.status || code != c.code {
			t.Errorf("StatusFor(%v) = %d %s, want %d %s", c.err, status, code, c.status, c.code)
		}
	}
}

func TestWriteErrorHidesInternalDetails(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	WriteError(rec, errors.New("dial unix /var/run/docker.sock: secret detail"), 0)
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "docker.sock") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	WriteError(rec, sandbox.ErrBusy, 7)
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "7" {
		t.Fatalf("%d Retry-After=%q", rec.Code, rec.Header().Get("Retry-After"))
	}
	var body api.ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != "busy" || body.Error.Message == "" {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	toks, err := ParseTokens(strings.NewReader("# ops\n\n  0123456789abcdef-first  \nsecond-token-0123456789\n"))
	if err != nil || toks.Len() != 2 {
		t.Fatalf("%v %v", toks, err)
	}
	for tok, want := range map[string]bool{
		"0123456789abcdef-first":  true,
		"second-token-0123456789": true,
		"0123456789abcdef-firs":   false,
		"":                        false,
		"# ops":                   false,
	} {
		if got := toks.Valid(tok); got != want {
			t.Errorf("Valid(%q) = %v", tok, got)
		}
	}
	for _, bad := range []string{"", "# only a comment\n", "short\n", "has space in the middle of it\n"} {
		if _, err := ParseTokens(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseTokens(%q) accepted", bad)
		}
	}
	r := httptest.NewRequest("POST", "/v1/execute", nil)
	if err := toks.authorize(r); !errors.Is(err, api.ErrUnauthorized) {
		t.Errorf("no header: %v", err)
	}
	r.Header.Set("Authorization", "bearer second-token-0123456789")
	if err := toks.authorize(r); err != nil {
		t.Errorf("lower-case scheme: %v", err)
	}
	r.Header.Set("Authorization", "Basic second-token-0123456789")
	if err := toks.authorize(r); err == nil {
		t.Error("Basic scheme accepted")
	}
}

func TestLoopbackOnlyWithoutTokens(t *testing.T) {
	t.Parallel()
	var none *Tokens
	for host, ok := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "127.1.2.3": true, "LOCALHOST": true,
		"evil.example:8080": false, "10.0.0.1:8080": false, "": false, "localhost.evil.example": false,
	} {
		r := httptest.NewRequest("POST", "/v1/execute", nil)
		r.Host = host
		if err := none.authorize(r); (err == nil) != ok {
			t.Errorf("Host %q: %v", host, err)
		}
	}
	r := httptest.NewRequest("POST", "/v1/execute", nil)
	r.Host = "127.0.0.1:8080"
	r.Header.Set("Origin", "http://127.0.0.1:8080")
	if err := none.authorize(r); !errors.Is(err, api.ErrForbidden) {
		t.Errorf("Origin accepted: %v", err)
	}
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, "localhost:0": true, "[::1]:80": true, "0.0.0.0:8080": false, ":8080": false, "10.1.2.3:80": false} {
		if err := CheckListenAddr(addr, false); (err == nil) != ok {
			t.Errorf("CheckListenAddr(%q): %v", addr, err)
		}
		if err := CheckListenAddr(addr, true); err != nil {
			t.Errorf("CheckListenAddr(%q) with tokens: %v", addr, err)
		}
	}
	if err := CheckExposure(&net.TCPAddr{IP: net.IPv4zero, Port: 80}, false); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("0.0.0.0 without tokens: %v", err)
	}
}

func TestLimitsParse(t *testing.T) {
	t.Parallel()
	var req api.ExecuteRequest
	body := `{"argv":["x"],"limits":{"timeout":"1.5s","memory":268435456,"cpus":0.5,"pids":"64","output_limit":"64k","output_ceiling":"1m","workdir_size":"32m","tmp_size":"16MiB"}}`
	if err := decodeSpec(strings.NewReader(body), &req); err != nil {
		t.Fatal(err)
	}
	l, err := config.ResolveLimits(limitsConfig(req.Limits), config.DefaultLimits(), sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := sandbox.Limits{TimeoutMS: 1500, MemoryBytes: 256 << 20, MilliCPUs: 500, Pids: 64, OutputBytes: 64 << 10, OutputCeilingBytes: 1 << 20, WorkdirBytes: 32 << 20, TmpBytes: 16 << 20}
	if l != want {
		t.Errorf("limits %+v, want %+v", l, want)
	}
	parse := func(l api.Limits) (sandbox.Limits, error) {
		return config.ResolveLimits(limitsConfig(l), config.DefaultLimits(), sandbox.Limits{})
	}
	if l, err := parse(api.Limits{Timeout: "30"}); err != nil || l.TimeoutMS != 30_000 {
		t.Errorf("bare number timeout: %+v %v", l, err)
	}
	for _, bad := range []api.Limits{{Memory: "-1"}, {Timeout: "0"}, {Timeout: "10us"}, {Pids: "1.5"}, {Pids: "0"}, {CPUs: "-2"}, {Memory: "lots"}, {WorkdirSize: "0.1b"}} {
		if _, err := parse(bad); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("%+v accepted: %v", bad, err)
		}
	}
	for _, bad := range []string{`{"argv":["x"],"limits":{"memory":true}}`, `{"argv":["x"],"limits":{"memory":[1]}}`} {
		if err := decodeSpec(strings.NewReader(bad), &req); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestDecodeSpec(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		``:                             "empty JSON body",
		`{"argv":["x"]`:                "malformed JSON",
		`{"argv":["x"]} {}`:            "trailing data",
		`{"argv":"x"}`:                 `field "argv"`,
		`{"argv":["x"],"argvv":["y"]}`: `unknown field "argvv"`,
		`{"argv":["x"],"files":{"a":{"content":"x","mode":1}}}`: `unknown field "mode"`,
	} {
		var req api.ExecuteRequest
		err := decodeSpec(strings.NewReader(body), &req)
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	var req api.ExecuteRequest
	err := decodeSpec(strings.NewReader(`{"argv":["cat"],"files":{"a.txt":"hi","b.bin":{"content":"AP8=","encoding":"base64"}},"stdin":"AQI=","stdin_encoding":"base64"}`), &req)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := req.Files["b.bin"].Bytes(); !bytes.Equal(b, []byte{0, 0xff}) {
		t.Errorf("b.bin = %v", b)
	}
	if b, _ := req.Files["a.txt"].Bytes(); string(b) != "hi" {
		t.Errorf("a.txt = %q", b)
	}
	if _, err := (api.File{Content: "x", Encoding: "rot13"}).Bytes(); err == nil {
		t.Error("unknown encoding accepted")
	}
}

func TestIncompleteSuffix(t *testing.T) {
	t.Parallel()
	euro := []byte("€") // e2 82 ac
	cases := []struct {
		in   []byte
		want int
	}{
		{[]byte("abc"), 0},
		{euro, 0},
		{euro[:1], 1},
		{euro[:2], 2},
		{append([]byte("ab"), euro[:2]...), 2},
		{[]byte{0xff}, 0},       // never valid: nothing to wait for
		{[]byte{0x82, 0xac}, 0}, // continuation bytes without a start
		{nil, 0},
	}
	for _, c := range cases {
		if got := incompleteSuffix(c.in); got != c.want {
			t.Errorf("incompleteSuffix(%x) = %d, want %d", c.in, got, c.want)
		}
	}
}

// A multi-byte character split across two chunks of output arrives as text,
// not as two base64 fragments; invalid bytes still arrive, as base64.
func TestStreamerKeepsUTF8Whole(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	st := newStreamer(rec, time.Second, func(error) {})
	euro := []byte("€")
	st.output(sandbox.Stdout, append([]byte("price: 3"), euro[:1]...))
	st.output(sandbox.Stderr, []byte("warn\n"))
	st.output(sandbox.Stdout, append(euro[1:], '\n'))
	st.output(sandbox.Stdout, []byte{0xff, 0xfe})
	st.output(sandbox.Stdout, euro[:2]) // held back, then flushed by finish
	st.finish(resultEvent(sandbox.Result{ID: "r-1", Status: sandbox.StatusOK}.Wire()))
	var got []api.Event
	dec := json.NewDecoder(rec.Body)
	for {
		var ev api.Event
		if err := dec.Decode(&ev); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	want := []struct{ typ, data, enc string }{
		{"stdout", "price: 3", "utf-8"},
		{"stderr", "warn\n", "utf-8"},
		{"stdout", "€\n", "utf-8"},
		{"stdout", "\xff\xfe", "base64"},
		{"stdout", string(euro[:2]), "base64"},
		{"result", "", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d events: %+v", len(got), got)
	}
	for i, w := range want {
		if got[i].Type != w.typ || string(got[i].Data) != w.data || (w.enc != "" && got[i].Encoding != w.enc) {
			t.Errorf("event %d = %s %q %s, want %s %q %s", i, got[i].Type, got[i].Data, got[i].Encoding, w.typ, w.data, w.enc)
		}
	}
	if rec.Header().Get("Content-Type") != api.ContentTypeNDJSON {
		t.Errorf("content type %q", rec.Header().Get("Content-Type"))
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	for range 20 {
		m.RunFinished(sandbox.StatusOK, 2*time.Second)
	}
	low := m.retryAfter(sandbox.Stats{Running: 4, Queued: 0, MaxConcurrent: 4, QueueSize: 8})
	high := m.retryAfter(sandbox.Stats{Running: 4, Queued: 8, MaxConcurrent: 4, QueueSize: 8})
	if low < 1 || high <= low || high > 60 {
		t.Errorf("retryAfter low %d high %d", low, high)
	}
}

// tarOf builds an archive from headers (content is the header's Linkname
// field abused as data for regular files, to keep cases one-liners).
func tarOf(t testing.TB, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		data := ""
		if h.Typeflag == tar.TypeReg {
			data, h.Linkname = h.Linkname, ""
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if data != "" {
			if _, err := tw.Write([]byte(data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadBodySnapshots(t *testing.T) {
	t.Parallel()
	opts := BodyOptions{MaxBodyBytes: 1 << 20, WorkspaceMaxBytes: 1 << 16, ReadTimeout: time.Second}
	good := tarOf(t, &tar.Header{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "dir/a.txt", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "hello"},
		&tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "dir/a.txt"})
	req := httptest.NewRequest("POST", "/v1/execute", bytes.NewReader(good))
	req.Header.Set("Content-Type", api.ContentTypeTar)
	req.Header.Set(api.HeaderSpec, `{"argv":["ls"]}`)
	var spec api.ExecuteRequest
	snap, err := ReadBody(httptest.NewRecorder(), req, &spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	names, _ := snap.Names(10)
	if strings.Join(names, ",") != "dir/,dir/a.txt,link" || snap.Stats.Bytes != 5 || spec.Argv[0] != "ls" {
		t.Errorf("names %v stats %+v spec %+v", names, snap.Stats, spec)
	}
	// Read twice: each Reader starts at the beginning.
	a, _ := io.ReadAll(snap.Reader())
	b, _ := io.ReadAll(snap.Reader())
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Error("snapshot reader is not repeatable")
	}

	bad := map[string]struct {
		body []byte
		is   error
	}{
		"escaping path":  {tarOf(t, &tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Linkname: "x"}), sandbox.ErrInvalidSpec},
		"absolute path":  {tarOf(t, &tar.Header{Name: "/etc/passwd", Typeflag: tar.TypeReg, Linkname: "x"}), sandbox.ErrInvalidSpec},
		"device node":    {tarOf(t, &tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}), sandbox.ErrInvalidSpec},
		"outside link":   {tarOf(t, &tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "../../etc/shadow"}), sandbox.ErrInvalidSpec},
		"not a tar":      {bytes.Repeat([]byte("x"), 1024), sandbox.ErrInvalidSpec},
		"over workspace": {tarOf(t, &tar.Header{Name: "big", Typeflag: tar.TypeReg, Linkname: strings.Repeat("b", 1<<17)}), sandbox.ErrTooLarge},
		"over body":      {tarOf(t, &tar.Header{Name: "big", Typeflag: tar.TypeReg, Linkname: strings.Repeat("b", 2<<20)}), sandbox.ErrTooLarge},
	}
	for name, c := range bad {
		req := httptest.NewRequest("POST", "/v1/execute", bytes.NewReader(c.body))
		req.ContentLength = -1 // as if chunked: only the reader can tell
		req.Header.Set("Content-Type", api.ContentTypeTar)
		var spec api.ExecuteRequest
		snap, err := ReadBody(httptest.NewRecorder(), req, &spec, opts)
		if !errors.Is(err, c.is) || snap != nil {
			t.Errorf("%s: %v (snapshot %v), want %v", name, err, snap, c.is)
		}
	}
}

// A declared Content-Length over the cap is refused without reading a byte.
func TestReadBodyRefusesLengthUnread(t *testing.T) {
	t.Parallel()
	body := &explodingReader{t: t}
	req := httptest.NewRequest("POST", "/v1/execute", body)
	req.ContentLength = 10 << 30
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	var spec api.ExecuteRequest
	_, err := ReadBody(httptest.NewRecorder(), req, &spec, BodyOptions{MaxBodyBytes: 1 << 20})
	if !errors.Is(err, sandbox.ErrTooLarge) || !strings.Contains(err.Error(), "10GiB") {
		t.Fatalf("%v", err)
	}
}

type explodingReader struct{ t *testing.T }

func (e *explodingReader) Read([]byte) (int, error) {
	e.t.Error("the body was read")
	return 0, io.EOF
}

func TestMultipartBody(t *testing.T) {
	t.Parallel()
	opts := BodyOptions{MaxBodyBytes: 1 << 20, WorkspaceMaxBytes: 1 << 16}
	build := func(parts ...[2]string) (*http.Request, error) {
		var buf bytes.Buffer
		boundary := "xYzZY"
		for _, p := range parts {
			fmt.Fprintf(&buf, "--%s\r\nContent-Disposition: form-data; name=%q; filename=\"f\"\r\n\r\n%s\r\n", boundary, p[0], p[1])
		}
		fmt.Fprintf(&buf, "--%s--\r\n", boundary)
		req := httptest.NewRequest("POST", "/v1/test", &buf)
		req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
		return req, nil
	}
	archive := string(tarOf(t, &tar.Header{Name: "go.mod", Typeflag: tar.TypeReg, Linkname: "module x\n"}))
	// Where the spec sets the snapshot's bound, it must come first.
	strict := opts
	strict.SnapshotLimit = func(any) (int64, error) { return 1 << 16, nil }
	req, _ := build([2]string{api.PartWorkspace, archive}, [2]string{api.PartSpec, `{"workdir":""}`})
	if _, err := ReadBody(httptest.NewRecorder(), req, &api.TestRequest{}, strict); !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), "must come before") {
		t.Errorf("workspace before spec: %v", err)
	}
	// Without one (the validate handler) the workspace may come first.
	req, _ = build([2]string{api.PartWorkspace, archive}, [2]string{api.PartSpec, `{"workdir":""}`})
	var spec api.TestRequest
	snap, err := ReadBody(httptest.NewRecorder(), req, &spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := snap.Names(5)
	snap.Close()
	if len(names) != 1 || names[0] != "go.mod" {
		t.Errorf("names %v", names)
	}
	for name, parts := range map[string][][2]string{
		"unknown part":   {{"extra", "x"}},
		"two workspaces": {{api.PartWorkspace, archive}, {api.PartWorkspace, archive}},
		"bad spec":       {{api.PartSpec, `{"nope":1}`}},
	} {
		req, _ := build(parts...)
		if _, err := ReadBody(httptest.NewRecorder(), req, &spec, opts); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

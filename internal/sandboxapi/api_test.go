package sandboxapi

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/health"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testkit"
)

func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{maxConcurrent: 3, queue: 5})
	resp, body := h.do(context.Background(), http.MethodGet, api.RouteHealth, "", nil)
	if resp.StatusCode != 200 || string(body) != health.Body || resp.Header.Get("Content-Type") != health.ContentType {
		t.Fatalf("healthz %d %s, want the shape of every server's: %s", resp.StatusCode, body, health.Body)
	}
	resp, body = h.do(context.Background(), http.MethodGet, api.RouteReady, "", nil)
	var ready map[string]any
	if err := json.Unmarshal(body, &ready); err != nil || resp.StatusCode != 200 || ready["status"] != "ready" ||
		!strings.HasPrefix(fmt.Sprint(ready["image_digest"]), "sha256:") || ready["max_concurrent"] != 3.0 {
		t.Fatalf("readyz %d %s", resp.StatusCode, body)
	}
	h.execute(api.ExecuteRequest{Argv: []string{"true"}})
	h.execute(api.ExecuteRequest{Argv: []string{"false"}})
	for name, want := range map[string]float64{
		`aster_sandbox_runs_total{status="ok"}`:                             1,
		`aster_sandbox_runs_total{status="exit_nonzero"}`:                   1,
		`aster_sandbox_runs_total{status="timeout"}`:                        0,
		`aster_sandbox_max_concurrent`:                                      3,
		`aster_sandbox_queue_size`:                                          5,
		`aster_sandbox_running`:                                             0,
		`aster_sandbox_queue_depth`:                                         0,
		`aster_engine_up`:                                                   1,
		`aster_api_requests_total{code="200",route="/v1/execute"}`:          2,
		`aster_sandbox_run_duration_seconds_count{status="ok"}`:             1,
		`aster_sandbox_rejected_total{reason="queue_full"}`:                 0,
		`aster_sandbox_phase_seconds_count{phase="queue",runtime="docker"}`: 2,
		`aster_sandbox_phase_seconds_count{phase="job",runtime="docker"}`:   2,
		`aster_sandbox_phase_seconds_count{phase="total",runtime="docker"}`: 2,
		// The phases no runtime records: the request's admission, the answer's
		// writing, and the removal (on the response path here, no BackgroundClose).
		`aster_sandbox_phase_seconds_count{phase="admission",runtime="docker"}`: 2,
		`aster_sandbox_phase_seconds_count{phase="result",runtime="docker"}`:    2,
		`aster_sandbox_phase_seconds_count{phase="remove",runtime="docker"}`:    2,
	} {
		if got := h.metric(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

func TestExecuteJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	res := h.execute(api.ExecuteRequest{
		Argv: []string{"sh", "-c", `cat sub/in.txt; printf ' %s ' "$GREETING"; cat; od -An -tx1 sub/bin.dat; echo to-stderr >&2; exit 3`},
		JobRequest: api.JobRequest{
			Files: map[string]api.File{
				"sub/in.txt":  api.TextFile("héllo"),
				"sub/bin.dat": api.BinaryFile([]byte{0, 1, 0xff}),
			},
			Stdin: "from stdin",
			Env:   map[string]string{"GREETING": "hi"},
			Limits: api.Limits{
				Timeout: "10s", Memory: "128m", CPUs: "0.5", Pids: "32", OutputLimit: "4k",
			},
		},
	})
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 3 {
		t.Errorf("status %s exit %d (%s)", res.Status, res.ExitCode, res.Error)
	}
	if want := "héllo hi from stdin 00 01 ff\n"; res.Stdout != want || res.StdoutEncoding != "utf-8" {
		t.Errorf("stdout %q (%s), want %q", res.Stdout, res.StdoutEncoding, want)
	}
	if res.Stderr != "to-stderr\n" || res.Runtime != "docker" || !strings.HasPrefix(res.ImageDigest, "sha256:") || res.TimingsMS["total"] <= 0 {
		t.Errorf("result %+v", res)
	}
	// Binary output travels as base64; workdir is honoured.
	res = h.execute(api.ExecuteRequest{
		Argv:       []string{"sh", "-c", `pwd; printf '\377\000'`},
		JobRequest: api.JobRequest{Workdir: "w", Files: map[string]api.File{"w/.keep": api.TextFile("")}},
	})
	out, err := res.Output(api.Stdout)
	if err != nil || res.StdoutEncoding != "base64" || !bytes.Equal(out, []byte("/work/w\n\xff\x00")) {
		t.Errorf("binary stdout %q %s: %v", out, res.StdoutEncoding, err)
	}
	// Limits are applied: a 1s timeout kills a long sleep.
	res = h.execute(api.ExecuteRequest{Argv: []string{"sleep", "30"}, JobRequest: api.JobRequest{Limits: api.Limits{Timeout: "1s"}}})
	if res.Status != sandbox.StatusTimeout {
		t.Errorf("sleep 30 with 1s timeout: %s", res.Status)
	}
}

// Accept: application/x-ndjson on the plain routes still streams, as the
// stream routes do, for clients written before those routes. (The
// description lists only the stream routes' NDJSON, so this request goes
// around the checking transport.)
func TestAcceptStreamsOnThePlainRoute(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	b, _ := json.Marshal(api.ExecuteRequest{Argv: []string{"sh", "-c", "echo streamed"}})
	req, _ := http.NewRequest(http.MethodPost, h.base+api.RouteExecute, bytes.NewReader(b))
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	req.Header.Set("Accept", api.ContentTypeNDJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != api.ContentTypeNDJSON {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
	var first, last api.Event
	if err := json.Unmarshal(lines[0], &first); err != nil || first.Type != api.EventStdout || string(first.Data) != "streamed\n" {
		t.Errorf("first line %s (%v)", lines[0], err)
	}
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil || last.Type != api.EventResult {
		t.Errorf("last line %s (%v)", lines[len(lines)-1], err)
	}
}

// Output events arrive while the job runs, in order, before the result, and
// together they are exactly the job's output.
func TestExecuteStreamOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	script := `for i in 1 2 3; do echo "out $i"; echo "err $i" >&2; sleep 0.4; done; echo last`
	resp := h.stream(api.ExecuteRequest{Argv: []string{"sh", "-c", script}})
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != api.ContentTypeNDJSON || resp.Header.Get(api.HeaderRunID) == "" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	var stdout, stderr strings.Builder
	var firstAt, resultAt time.Time
	var result sandbox.WireResult
	sc := bufio.NewScanner(resp.Body)
	events := 0
	for sc.Scan() {
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if !resultAt.IsZero() {
			t.Fatalf("event after the result: %s", sc.Text())
		}
		events++
		switch ev.Type {
		case api.EventStdout, api.EventStderr:
			if firstAt.IsZero() {
				firstAt = time.Now()
			}
			if ev.Type == api.EventStdout {
				stdout.Write(ev.Data)
			} else {
				stderr.Write(ev.Data)
			}
		case api.EventResult:
			resultAt = time.Now()
			if err := json.Unmarshal(ev.Result, &result); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("unexpected event %s", sc.Text())
		}
	}
	if resultAt.IsZero() {
		t.Fatal("no result event")
	}
	if d := resultAt.Sub(firstAt); d < 700*time.Millisecond {
		t.Errorf("first output only %s before the result: not streamed", d)
	}
	if stdout.String() != "out 1\nout 2\nout 3\nlast\n" || stderr.String() != "err 1\nerr 2\nerr 3\n" {
		t.Errorf("streamed stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if result.Stdout != stdout.String() || result.Stderr != stderr.String() || result.Status != sandbox.StatusOK {
		t.Errorf("result %+v does not match the stream", result)
	}
	if events < 8 {
		t.Errorf("only %d events", events)
	}
}

// With several files that do not decode, the same one is named every time.
func TestJobSpecNamesBadFilesInOneOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	bad := api.File{Content: "!!", Encoding: "base64"}
	req := api.JobRequest{Files: map[string]api.File{"ok": {Content: "x"}, "z": bad, "k": bad, "m": bad, "q": bad}}
	got := testkit.Same(t, func() string {
		_, err := h.srv.jobSpec(req, nil)
		return fmt.Sprint(err)
	})
	if want := `files["k"]`; !strings.Contains(got, want) {
		t.Errorf("jobSpec: %s, want %s", got, want)
	}
}

// Every refusal answers with the right status and a JSON error, and starts
// nothing.
func TestRequestErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{server: func(o *Options) { o.MaxBodyBytes = 1 << 20 }})
	badTar := tarOf(t, &tar.Header{Name: "../../etc/cron.d/x", Typeflag: tar.TypeReg, Linkname: "x"})
	devTar := tarOf(t, &tar.Header{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8})
	// Just over the 1 MiB cap: what the server leaves unread fits the sockets' buffers, so
	// the client finishes writing and reads the 413 before the server closes the connection
	// (a body far over the cap would have its write reset by that close, under load).
	bigTar := tarOf(t, &tar.Header{Name: "big", Typeflag: tar.TypeReg, Linkname: strings.Repeat("x", 1<<20+32<<10)})
	wsTar := tarOf(t, &tar.Header{Name: "f", Typeflag: tar.TypeReg, Linkname: strings.Repeat("x", 1200<<10)})
	type tc struct {
		name, method, path, ctype string
		body                      []byte
		header                    []string
		status                    int
		code, msg                 string
	}
	cases := []tc{
		{"malformed json", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":`), nil, 400, "invalid_spec", "malformed JSON"},
		{"empty body", "POST", api.RouteExecute, api.ContentTypeJSON, nil, nil, 400, "invalid_spec", "empty"},
		{"missing argv", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{}`), nil, 400, "invalid_spec", "no command"},
		{"unknown field", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"network":true}`), nil, 400, "invalid_spec", `unknown field "network"`},
		{"unknown image", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"image":"alpine:latest"}`), nil, 400, "unknown_image", "allowlist"},
		{"negative memory", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"limits":{"memory":-5}}`), nil, 400, "invalid_spec", "negative"},
		{"memory under minimum", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"limits":{"memory":"1m"}}`), nil, 400, "invalid_spec", "memory 1MiB is out of range"},
		{"over ceiling", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"limits":{"timeout":"1h"}}`), nil, 400, "invalid_spec", "limits.timeout 1h0m0s is above this server's ceiling of 10m0s"},
		{"huge pids", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"limits":{"pids":99999999999}}`), nil, 400, "invalid_spec", "limits.pids"},
		{"bad base64", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"files":{"a":{"content":"!!","encoding":"base64"}}}`), nil, 400, "invalid_spec", "files["},
		{"bad file name", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"files":{"../escape":"x"}}`), nil, 400, "invalid_spec", ""},
		{"bad env name", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"env":{"A-B":"1"}}`), nil, 400, "invalid_spec", "environment variable"},
		{"bad workdir", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"],"workdir":"../.."}`), nil, 400, "invalid_spec", "workdir"},
		{"hostile tar", "POST", api.RouteExecute, api.ContentTypeTar, badTar, []string{api.HeaderSpec, `{"argv":["ls"]}`}, 400, "invalid_spec", "snapshot"},
		{"device node", "POST", api.RouteExecute, api.ContentTypeTar, devTar, []string{api.HeaderSpec, `{"argv":["ls"]}`}, 400, "invalid_spec", "device node"},
		{"files and snapshot", "POST", api.RouteExecute, api.ContentTypeTar, tarOf(t), []string{api.HeaderSpec, `{"argv":["ls"],"files":{"a":"b"}}`}, 400, "invalid_spec", "not both"},
		{"bad spec header", "POST", api.RouteExecute, api.ContentTypeTar, tarOf(t), []string{api.HeaderSpec, `{"argv":`}, 400, "invalid_spec", api.HeaderSpec},
		{"test not detected", "POST", api.RouteTest, api.ContentTypeJSON, []byte(`{"files":{"README":"x"}}`), nil, 400, "invalid_spec", "no test runner detected"},
		{"report without command", "POST", api.RouteTest, api.ContentTypeJSON, []byte(`{"report":{"format":"junit-xml"},"files":{"go.mod":"module x"}}`), nil, 400, "invalid_spec", "report is only used with command"},
		{"junit without path", "POST", api.RouteTest, api.ContentTypeJSON, []byte(`{"command":["mvn","test"],"report":{"format":"junit-xml"}}`), nil, 400, "invalid_spec", "path"},
		{"setup with an empty program", "POST", api.RouteTest, api.ContentTypeJSON, []byte(`{"setup":[""],"files":{"go.mod":"module x"}}`), nil, 400, "invalid_spec", "setup"},
		{"setup with NUL", "POST", api.RouteTest, api.ContentTypeJSON, []byte(`{"setup":["a\u0000b"],"files":{"go.mod":"module x"}}`), nil, 400, "invalid_spec", "setup"},
		{"install timeout over ceiling", "POST", api.RouteTest, api.ContentTypeJSON, []byte(`{"install_timeout":"2h","files":{"go.mod":"module x"}}`), nil, 400, "invalid_spec", "install_timeout"},
		{"install timeout garbage", "POST", api.RouteTest, api.ContentTypeJSON, []byte(`{"install_timeout":"soon","files":{"go.mod":"module x"}}`), nil, 400, "invalid_spec", "install_timeout"},
		{"chunked body over max", "POST", api.RouteExecute, api.ContentTypeTar, bigTar, []string{api.HeaderSpec, `{"argv":["ls"]}`}, 413, "too_large", "--max-body"},
		{"snapshot over workdir", "POST", api.RouteExecute, api.ContentTypeTar, wsTar, []string{api.HeaderSpec, `{"argv":["ls"],"limits":{"workdir_size":"1m"}}`}, 413, "too_large", "workdir_size"},
		{"media type", "POST", api.RouteExecute, "text/plain", []byte(`{"argv":["true"]}`), nil, 415, "unsupported_media_type", "application/json"},
		{"form post", "POST", api.RouteExecute, "application/x-www-form-urlencoded", []byte(`{"argv":["true"]}`), nil, 415, "unsupported_media_type", ""},
		{"no content type", "POST", api.RouteExecute, "", []byte(`{"argv":["true"]}`), nil, 415, "unsupported_media_type", ""},
		{"web page", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"]}`), []string{"Origin", "https://evil.example"}, 403, "forbidden", "Origin"},
		{"rebinding", "POST", api.RouteExecute, api.ContentTypeJSON, []byte(`{"argv":["true"]}`), []string{"Host", "evil.example:8080"}, 403, "forbidden", "loopback"},
		{"get execute", "GET", api.RouteExecute, "", nil, nil, 405, "method_not_allowed", "POST"},
		{"post healthz", "POST", api.RouteHealth, api.ContentTypeJSON, []byte(`{}`), nil, 405, "method_not_allowed", ""},
		{"unknown route", "GET", "/v2/execute", "", nil, nil, 404, "not_found", "/v1/execute"},
		{"no validator", "POST", api.RouteValidate, api.ContentTypeJSON, []byte(`{}`), nil, 404, "not_found", "validator"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != nil {
				// A reader without a known length: the body arrives chunked, so
				// only reading it can show it is too large.
				body = io.MultiReader(bytes.NewReader(c.body))
			}
			ctype := c.ctype
			if ctype == "" && c.method == "POST" {
				ctype = "-"
			}
			req, err := http.NewRequest(c.method, h.base+c.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if ctype != "-" && ctype != "" {
				req.Header.Set("Content-Type", ctype)
			}
			for i := 0; i+1 < len(c.header); i += 2 {
				if c.header[i] == "Host" {
					req.Host = c.header[i+1]
				} else {
					req.Header.Set(c.header[i], c.header[i+1])
				}
			}
			resp, err := h.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			detail := errorOf(t, resp, b, c.status, c.code)
			if !strings.Contains(detail.Message, c.msg) {
				t.Errorf("message %q does not mention %q", detail.Message, c.msg)
			}
			if c.status == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
	// Nothing was started by any of them.
	if n := containers(t, h.label); n != 0 {
		t.Errorf("%d containers exist", n)
	}
	total := 0.0
	for _, s := range sandbox.Statuses {
		total += h.metric(fmt.Sprintf(`aster_sandbox_runs_total{status=%q}`, s))
	}
	if total != 0 {
		t.Errorf("%v runs were started", total)
	}
	// And the service still runs jobs.
	if res := h.execute(api.ExecuteRequest{Argv: []string{"echo", "still up"}}); res.Stdout != "still up\n" {
		t.Errorf("after the errors: %+v", res)
	}
}

// A body whose declared length is over --max-body is refused before it is
// sent: the client gets its 413 having written only the headers.
func TestTooLargeAnsweredBeforeBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{server: func(o *Options) { o.MaxBodyBytes = 1 << 20 }})
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n", api.RouteExecute, int64(10)<<30)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer without the body: %v", err)
	}
	b := checkRaw(t, http.MethodPost, api.RouteExecute, resp)
	d := errorOf(t, resp, b, 413, "too_large")
	if !strings.Contains(d.Message, "10GiB") {
		t.Errorf("message %q", d.Message)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	toks, err := ParseTokens(strings.NewReader("token-for-the-tests-0001\n"))
	if err != nil {
		t.Fatal(err)
	}
	var validated int
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.Tokens = toks
		o.Validator = validatorFunc(func(context.Context, gate.ValidateInput) (gate.ValidateResponse, error) {
			validated++
			return gate.ValidateResponse{Findings: []gate.Marked{}, Summary: gate.Summarize(nil), Analyzers: []gate.AnalyzerResult{}}, nil
		})
	}})
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong-token-000000000000"}, {"Authorization", "token-for-the-tests-0001"}} {
		resp, body := h.postJSON(api.RouteExecute, api.ExecuteRequest{Argv: []string{"true"}}, hdr...)
		errorOf(t, resp, body, 401, "unauthorized")
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Error("401 without WWW-Authenticate")
		}
		resp, body = h.do(context.Background(), http.MethodGet, api.RouteMetrics, "", nil, hdr...)
		errorOf(t, resp, body, 401, "unauthorized")
		resp, body = h.postJSON(api.RouteValidate, map[string]any{}, hdr...)
		errorOf(t, resp, body, 401, "unauthorized")
	}
	if validated != 0 {
		t.Fatal("validator reached without a token")
	}
	// Health checks need no token; with one, everything works, Origin or not.
	if resp, _ := h.do(context.Background(), http.MethodGet, api.RouteHealth, "", nil); resp.StatusCode != 200 {
		t.Errorf("healthz %d", resp.StatusCode)
	}
	h.token = "token-for-the-tests-0001"
	if res := h.execute(api.ExecuteRequest{Argv: []string{"echo", "ok"}}); res.Stdout != "ok\n" {
		t.Errorf("%+v", res)
	}
	if resp, body := h.do(context.Background(), http.MethodPost, api.RouteValidate, api.ContentTypeTar, bytes.NewReader(manyFiles(t, 1, 16)),
		api.HeaderSpec, `{}`, "Origin", "https://ci.example"); resp.StatusCode != 200 || validated != 1 {
		t.Errorf("validate %d %s", resp.StatusCode, body)
	}
	if got := h.metric(`aster_api_requests_total{code="401",route="/v1/execute"}`); got != 3 {
		t.Errorf("401s counted: %v", got)
	}
}

// Past the slots and the queue the answer is 429 with Retry-After; a run
// that waits past the queue timeout gets one too.
func TestBusy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{maxConcurrent: 1, queue: 1, queueTimeout: 700 * time.Millisecond})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := h.tryExecute(api.ExecuteRequest{Argv: []string{"sleep", "4"}}); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, 30*time.Second, "the first run to hold the slot", func() bool { return h.mgr.Stats().Running == 1 })

	// Queued behind it, this one times out in the queue.
	start := time.Now()
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		resp, body, err := h.tryPost(api.RouteExecute, api.ExecuteRequest{Argv: []string{"true"}})
		if err != nil {
			t.Error(err)
			return
		}
		d := errorOf(t, resp, body, 429, "busy")
		if !strings.Contains(d.Message, "queue") || time.Since(start) < 600*time.Millisecond {
			t.Errorf("queue timeout after %s: %s", time.Since(start), d.Message)
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
			t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
	}()
	waitFor(t, 10*time.Second, "the second run to queue", func() bool { return h.mgr.Stats().Queued == 1 })
	// The queue is full: refused at once.
	t0 := time.Now()
	resp, body := h.postJSON(api.RouteExecute, api.ExecuteRequest{Argv: []string{"true"}})
	errorOf(t, resp, body, 429, "busy")
	if time.Since(t0) > 500*time.Millisecond || resp.Header.Get("Retry-After") == "" {
		t.Errorf("full queue answered in %s, Retry-After %q", time.Since(t0), resp.Header.Get("Retry-After"))
	}
	<-queued
	wg.Wait()
	if h.metric(`aster_sandbox_rejected_total{reason="queue_full"}`) != 1 || h.metric(`aster_sandbox_rejected_total{reason="queue_timeout"}`) != 1 {
		t.Errorf("rejections not counted")
	}
	if got := h.metric(`aster_api_requests_total{code="429",route="/v1/execute"}`); got != 2 {
		t.Errorf("429s counted %v", got)
	}
}

// A client that goes away cancels its run, and its sandbox is destroyed.
func TestClientDisconnectCancels(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	for _, stream := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		b, _ := json.Marshal(api.ExecuteRequest{Argv: []string{"sleep", "60"}})
		route := api.RouteExecute
		if stream {
			route = api.RouteExecuteStream
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.base+route, bytes.NewReader(b))
		req.Header.Set("Content-Type", api.ContentTypeJSON)
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := h.http.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		waitFor(t, 30*time.Second, "the sandbox to start", func() bool { return containers(t, h.label, "running") == 1 })
		time.Sleep(time.Second) // past aster-init's hello: the job itself is running
		cancel()
		<-done
		t0 := time.Now()
		waitFor(t, 15*time.Second, "the sandbox to be destroyed", func() bool { return containers(t, h.label) == 0 && h.mgr.Stats().Running == 0 })
		t.Logf("stream=%v: sandbox gone %s after the client left", stream, time.Since(t0).Round(time.Millisecond))
	}
	if got := h.metric(`aster_sandbox_runs_total{status="killed"}`); got != 2 {
		for _, s := range sandbox.Statuses {
			t.Logf("runs %s: %v", s, h.metric(fmt.Sprintf(`aster_sandbox_runs_total{status=%q}`, s)))
		}
		t.Errorf("killed runs %v, want 2", got)
	}
}

// /v1/test detects package.json and runs `npm test` (no machine-readable
// report: the status comes from the exit code, and the summary says so).
func TestTestEndpointNPM(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{maxConcurrent: 2})
	for project, want := range map[string]sandbox.Status{"npmpass": sandbox.StatusOK, "npmfail": sandbox.StatusExitNonzero} {
		t.Run(project, func(t *testing.T) {
			t.Parallel()
			spec := api.TestRequest{JobRequest: api.JobRequest{Limits: api.Limits{Timeout: "2m"}}}
			spec.Files = filesOf(t, "../testrun/testdata/"+project)
			resp, body := h.postJSON(api.RouteTest, spec)
			tr := decodeOK[api.TestResponse](t, resp, body)
			if tr.Status != want || tr.Tests.Framework != "npm" || fmt.Sprint(tr.Command) != "[npm test]" {
				t.Fatalf("status %s framework %q command %q stderr %q", tr.Status, tr.Tests.Framework, tr.Command, tr.Stderr)
			}
			if want == sandbox.StatusExitNonzero && !strings.Contains(tr.Stderr, "floating point addition is exact") {
				t.Fatalf("the failing assertion is not in stderr: %q", tr.Stderr)
			}
		})
	}
}

// /v1/test with a dependency step and no allowed egress host: the install
// does not run, the answer says why and names the setting, the tests run; a
// caller's cache_key is ignored unless the operator enabled caller keys.
func TestTestEndpointInstallNotAllowed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{maxConcurrent: 2})
	spec := api.TestRequest{Command: []string{"node", "-e", "require('left-pad')"}, CacheKey: "org/repo",
		JobRequest: api.JobRequest{Limits: api.Limits{Timeout: "1m"}, Files: map[string]api.File{
			"package.json": {Content: `{"name":"p","version":"1.0.0","dependencies":{"left-pad":"1.3.0"}}`}}}}
	resp, body := h.postJSON(api.RouteTest, spec)
	tr := decodeOK[api.TestResponse](t, resp, body)
	in := tr.Install
	if in == nil || in.Status != api.InstallSkipped || in.Kind != "npm" || in.Cache != api.CacheOff || in.ID != "" ||
		!strings.Contains(in.Reason, "egress.allow") || !strings.Contains(in.Reason, "--egress-allow") {
		t.Fatalf("install %+v", in)
	}
	if tr.Phase != "test" || tr.Status != sandbox.StatusExitNonzero || !strings.Contains(tr.Stderr, "left-pad") {
		t.Fatalf("phase %s status %s stderr %q", tr.Phase, tr.Status, tr.Stderr)
	}
	// setup: [] turns the install phase off.
	spec.Setup = []string{}
	resp, body = h.postJSON(api.RouteTest, spec)
	tr = decodeOK[api.TestResponse](t, resp, body)
	if tr.Install != nil {
		t.Fatalf("setup [] still has an install: %+v", tr.Install)
	}
}

// /v1/test runs real Go and Python projects and parses their reports, with the
// snapshot sent each way the API accepts.
func TestTestEndpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{maxConcurrent: 4})
	type want struct {
		status                  sandbox.Status
		framework               string
		passed, failed, skipped int
		failures                []string
	}
	cases := []struct {
		name, project, mode string // mode: tar, multipart, files, subdir
		want                want
	}{
		{"go pass", "gopass", "tar", want{sandbox.StatusOK, "go", 3, 0, 1, nil}},
		{"go fail", "gofail", "multipart", want{sandbox.StatusExitNonzero, "go", 2, 2, 0, []string{"TestReverse", "TestTable/one"}}},
		{"python pass", "pypass", "files", want{sandbox.StatusOK, "pytest", 3, 0, 1, nil}},
		{"python fail", "pyfail", "subdir", want{sandbox.StatusExitNonzero, "pytest", 1, 2, 0, []string{"test_area", "test_error"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := "../testrun/testdata/" + c.project
			spec := api.TestRequest{JobRequest: api.JobRequest{Limits: api.Limits{Timeout: "3m"}}}
			var resp *http.Response
			var body []byte
			switch c.mode {
			case "tar":
				sj, _ := json.Marshal(spec)
				resp, body = h.do(context.Background(), http.MethodPost, api.RouteTest, api.ContentTypeTar, bytes.NewReader(packDir(t, dir, "")), api.HeaderSpec, string(sj))
			case "subdir":
				spec.Workdir = "repo/" + c.project
				sj, _ := json.Marshal(spec)
				resp, body = h.do(context.Background(), http.MethodPost, api.RouteTest, api.ContentTypeTar, bytes.NewReader(packDir(t, dir, "repo/"+c.project+"/")), api.HeaderSpec, string(sj))
			case "multipart":
				var buf bytes.Buffer
				mw := multipart.NewWriter(&buf)
				sj, _ := json.Marshal(spec)
				mw.WriteField(api.PartSpec, string(sj))
				fw, _ := mw.CreateFormFile(api.PartWorkspace, "ws.tar")
				fw.Write(packDir(t, dir, ""))
				mw.Close()
				resp, body = h.do(context.Background(), http.MethodPost, api.RouteTest, mw.FormDataContentType(), &buf)
			case "files":
				spec.Files = filesOf(t, dir)
				resp, body = h.postJSON(api.RouteTest, spec)
			}
			tr := decodeOK[api.TestResponse](t, resp, body)
			s := tr.Tests
			var names []string
			for _, f := range s.Failures {
				names = append(names, f.Name)
				if f.Message == "" {
					t.Errorf("failure %s without a message", f.Name)
				}
			}
			got := want{tr.Status, s.Framework, s.Passed, s.Failed, s.Skipped, names}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %+v\nwant %+v\nerror %q stderr %q", got, c.want, s.Error, tr.Stderr)
			}
			if !s.Parsed || len(tr.Command) == 0 {
				t.Errorf("parsed %v command %q", s.Parsed, tr.Command)
			}
		})
	}
	t.Run("custom command, streamed", func(t *testing.T) {
		t.Parallel()
		spec := api.TestRequest{Command: []string{"go", "test", "-json", "-run", "TestReverse", "./..."}, JobRequest: api.JobRequest{Limits: api.Limits{Timeout: "3m"}}}
		sj, _ := json.Marshal(spec)
		resp, body := h.do(context.Background(), http.MethodPost, api.RouteTestStream, api.ContentTypeTar, bytes.NewReader(packDir(t, "../testrun/testdata/gofail", "")),
			api.HeaderSpec, string(sj))
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
		var last api.Event
		if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil || last.Type != api.EventResult {
			t.Fatalf("last line %s: %v", lines[len(lines)-1], err)
		}
		var tr api.TestResponse
		json.Unmarshal(last.Result, &tr)
		if tr.Tests.Format != "go-test-json" || tr.Tests.Failed != 1 || tr.Tests.Passed != 0 || tr.Tests.Framework != "custom" {
			t.Errorf("summary %+v", tr.Tests)
		}
	})
}

// Shutdown: queued runs get 503 at once, running ones finish within the
// grace period, and past it they are cancelled and their sandboxes destroyed.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{maxConcurrent: 1, queue: 4, server: func(o *Options) { o.ShutdownGrace = 20 * time.Second }})
	finished := make(chan sandbox.WireResult, 1)
	go func() {
		res, err := h.tryExecute(api.ExecuteRequest{Argv: []string{"sh", "-c", "sleep 2; echo finished"}})
		if err != nil {
			t.Error(err)
		}
		finished <- res
	}()
	waitFor(t, 30*time.Second, "the run to start", func() bool { return h.mgr.Stats().Running == 1 })
	queued := make(chan *http.Response, 1)
	go func() {
		resp, body, err := h.tryPost(api.RouteExecute, api.ExecuteRequest{Argv: []string{"true"}})
		if err != nil {
			t.Error(err)
			queued <- &http.Response{Header: http.Header{}}
			return
		}
		errorOf(t, resp, body, 503, "unavailable")
		queued <- resp
	}()
	waitFor(t, 10*time.Second, "the second run to queue", func() bool { return h.mgr.Stats().Queued == 1 })
	if err := h.server.Stop(time.Minute); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if resp := <-queued; resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if res := <-finished; res.Status != sandbox.StatusOK || res.Stdout != "finished\n" {
		t.Errorf("running job during shutdown: %+v", res)
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(h.base, "http://"), time.Second); err == nil {
		t.Error("still accepting connections after shutdown")
	}

	h2 := newHarness(t, harnessOpts{server: func(o *Options) { o.ShutdownGrace = 500 * time.Millisecond }})
	killed := make(chan sandbox.WireResult, 1)
	go func() {
		res, err := h2.tryExecute(api.ExecuteRequest{Argv: []string{"sleep", "60"}})
		if err != nil {
			t.Error(err)
		}
		killed <- res
	}()
	// Past preparation (a slow engine can take longer than the grace to
	// start a container): the job itself is running.
	waitFor(t, 30*time.Second, "the sandbox to run", func() bool { return containers(t, h2.label, "running") == 1 })
	time.Sleep(time.Second)
	t0 := time.Now()
	if err := h2.server.Stop(30 * time.Second); err != nil {
		t.Fatalf("Serve after the grace period: %v", err)
	}
	res := <-killed
	if res.Status != sandbox.StatusKilled || !strings.Contains(res.Error, "shutting down") {
		t.Errorf("job past the grace: %s %q", res.Status, res.Error)
	}
	t.Logf("shutdown with a job past the grace took %s", time.Since(t0).Round(time.Millisecond))
	if n := containers(t, h.label) + containers(t, h2.label); n != 0 {
		t.Errorf("%d sandboxes left", n)
	}
}

// Slow clients are dropped by the header and body timeouts, and meanwhile
// the service answers everyone else.
func TestSlowLoris(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.ReadHeaderTimeout = 500 * time.Millisecond
		o.BodyReadTimeout = time.Second
	}})
	addr := strings.TrimPrefix(h.base, "http://")
	type outcome struct {
		what    string
		elapsed time.Duration
		status  int
	}
	results := make(chan outcome, 40)
	var wg sync.WaitGroup
	slow := func(what string, head string, dribble string) {
		defer wg.Done()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		t0 := time.Now()
		fmt.Fprint(conn, head)
		// Read in the background: a closed connection or an answer ends it.
		answered := make(chan int, 1)
		go func() {
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				answered <- 0
				return
			}
			if what == "body" {
				// The API answers a slow body; a request whose headers never
				// end is net/http's to refuse (plain text), not the API's.
				checkRaw(t, http.MethodPost, api.RouteExecute, resp)
			}
			answered <- resp.StatusCode
		}()
		for i := 0; ; i++ {
			select {
			case st := <-answered:
				results <- outcome{what, time.Since(t0), st}
				return
			case <-time.After(200 * time.Millisecond):
				if _, err := conn.Write([]byte{dribble[i%len(dribble)]}); err != nil {
					st := <-answered
					results <- outcome{what, time.Since(t0), st}
					return
				}
			}
		}
	}
	for range 15 {
		wg.Add(2)
		go slow("headers", "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\n", "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaa")
		go slow("body", "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", `{"argv":["true"]`)
	}
	// Meanwhile the service works.
	time.Sleep(300 * time.Millisecond)
	if res := h.execute(api.ExecuteRequest{Argv: []string{"echo", "fine"}}); res.Stdout != "fine\n" {
		t.Errorf("during the slow clients: %+v", res)
	}
	wg.Wait()
	close(results)
	for r := range results {
		limit := 3 * time.Second
		if r.elapsed > limit {
			t.Errorf("slow %s client held on for %s", r.what, r.elapsed)
		}
		if r.what == "body" && r.status != 408 && r.status != 0 {
			t.Errorf("slow body answered %d", r.status)
		}
	}
	if n := containers(t, h.label); n != 0 {
		t.Errorf("%d sandboxes left", n)
	}
}

// A client that asks for a stream and then stops reading is dropped by the
// per-write deadline; its run is cancelled and its sandbox destroyed, rather
// than the job blocking on a full pipe until its own timeout.
func TestStalledReaderDropped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{server: func(o *Options) { o.WriteTimeout = time.Second }})
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A small receive buffer, so the server's writes block soon.
	conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	body := `{"argv":["sh","-c","yes aster-output-line | head -c 60000000"],"limits":{"timeout":"2m","output_ceiling":"100m"}}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", api.RouteExecuteStream, len(body), body)
	waitFor(t, 30*time.Second, "the run to start", func() bool { return h.mgr.Stats().Running == 1 })
	t0 := time.Now()
	waitFor(t, 30*time.Second, "the stalled client's run to end", func() bool {
		return h.mgr.Stats().Running == 0 && containers(t, h.label) == 0
	})
	t.Logf("run ended %s after it started, with the client not reading", time.Since(t0).Round(time.Millisecond))
	if got := h.metric(`aster_sandbox_runs_total{status="killed"}`); got != 1 {
		t.Errorf("killed runs %v", got)
	}
}

// packDir tars a directory with every name under prefix.
func packDir(t *testing.T, dir, prefix string) []byte {
	t.Helper()
	files := filesOf(t, dir)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: prefix + name, Mode: 0o644, Size: int64(len(f.Content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.Content))
	}
	tw.Close()
	return buf.Bytes()
}

package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/openapitest"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/docker"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testkit"
)

// harness is a real Server (Serve on a loopback listener, so the timeouts
// are the production ones) over a real Manager on the local engine.
type harness struct {
	t       testing.TB
	mgr     *sandbox.Manager
	srv     *Server
	metrics *Metrics
	base    string
	label   string
	server  *testkit.Server
	http    *http.Client
	token   string
}

type harnessOpts struct {
	maxConcurrent int
	queue         int
	queueTimeout  time.Duration
	runtime       sandbox.Runtime // default: testRuntime(t)
	label         string          // the aster.test label of runtime's sandboxes
	server        func(*Options)
	pool          sandbox.PoolOptions
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	rt, label := o.runtime, o.label
	if rt == nil {
		rt, label = testRuntime(t)
	}
	if o.maxConcurrent == 0 {
		o.maxConcurrent = 4
	}
	if o.queue == 0 {
		o.queue = 64
	}
	if o.queueTimeout == 0 {
		o.queueTimeout = 2 * time.Minute
	}
	metrics := NewMetrics()
	mgr, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime:       rt,
		Images:        []string{sandboxtest.Image()},
		Defaults:      config.DefaultLimits(),
		Bounds:        config.LimitBounds(),
		MaxConcurrent: o.maxConcurrent,
		QueueSize:     o.queue,
		QueueTimeout:  o.queueTimeout,
		Pool:          o.pool,
		Observer:      metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	ceil, err := config.DefaultCeilings().Parse()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Manager: mgr, Metrics: metrics, Ceilings: ceil, MaxBodyBytes: 8 << 20, ShutdownGrace: 10 * time.Second}
	if o.server != nil {
		o.server(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	server := testkit.Serve(t, srv.Serve)
	h := &harness{
		t: t, mgr: mgr, srv: srv, metrics: metrics, base: server.URL, label: label, server: server,
		http: &http.Client{Transport: apiSpec(t).Transport(t, nil)},
	}
	t.Cleanup(func() {
		// The server stops before the manager closes; testkit reports
		// an error of its Serve.
		server.Stop(time.Minute)
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		if err := mgr.Close(cctx); err != nil {
			t.Errorf("close the manager: %v", err)
		}
	})
	return h
}

// apiSpec is the OpenAPI description (api/openapi) that every exchange of
// these tests is checked against: the harness's client checks each request
// and response, and the tests that write requests by hand check the answers
// they read with checkRaw.
func apiSpec(t testing.TB) *openapitest.Spec {
	t.Helper()
	s, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkRaw reads and closes the body of an answer read off a raw connection
// and checks it against the description as an answer to method path. It
// may run off the test's goroutine: it only reports.
func checkRaw(t testing.TB, method, path string, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("read the answer's body: %v", err)
		return b
	}
	s, err := openapitest.Load()
	if err == nil {
		err = s.CheckAnswer(method, path, resp, b)
	}
	if err != nil {
		t.Errorf("openapi: %v", err)
	}
	return b
}

// testRuntime is a Docker runtime whose sandboxes carry a label unique to
// this test in this process: other test processes (a teammate's
// `go test ./...`) run the same tests against the same engine.
func testRuntime(t testing.TB) (*docker.Runtime, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the container engine (skipped with -short)")
	}
	sandboxtest.Docker(t) // skips or fails without an engine and the image
	label := fmt.Sprintf("%s-%d-%d", filepath.Base(t.Name()), os.Getpid(), labelSeq.Add(1))
	rt, err := docker.New(docker.Options{InitPath: sandboxtest.InitBinary(t), Labels: map[string]string{"aster.test": label}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, label
}

var labelSeq atomic.Int64

// do sends a request and returns the response with its body read.
func (h *harness) do(ctx context.Context, method, path, contentType string, body io.Reader, header ...string) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, b
}

// postJSON posts v as JSON.
func (h *harness) postJSON(path string, v any, header ...string) (*http.Response, []byte) {
	h.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.do(context.Background(), http.MethodPost, path, api.ContentTypeJSON, bytes.NewReader(b), header...)
}

// decodeOK fails t unless resp answered 200 with a body that decodes as a T,
// and returns that value.
func decodeOK[T any](t testing.TB, resp *http.Response, body []byte) T {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// execute runs argv and returns the result, failing the test on any status
// but 200. Use tryExecute from other goroutines.
func (h *harness) execute(req api.ExecuteRequest) sandbox.WireResult {
	h.t.Helper()
	res, err := h.tryExecute(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// tryExecute is execute that reports instead of failing, for goroutines.
func (h *harness) tryExecute(req api.ExecuteRequest) (sandbox.WireResult, error) {
	resp, body, err := h.tryPost(api.RouteExecute, req)
	if err != nil {
		return sandbox.WireResult{}, fmt.Errorf("execute %q: %w", req.Argv, err)
	}
	if resp.StatusCode != http.StatusOK {
		return sandbox.WireResult{}, fmt.Errorf("execute %q: %d %s", req.Argv, resp.StatusCode, body)
	}
	var res sandbox.WireResult
	if err := json.Unmarshal(body, &res); err != nil {
		return res, fmt.Errorf("decode %s: %w", body, err)
	}
	if res.ID == "" || res.ID != resp.Header.Get(api.HeaderRunID) {
		return res, fmt.Errorf("result id %q, header %q", res.ID, resp.Header.Get(api.HeaderRunID))
	}
	return res, nil
}

// stream posts req asking for the NDJSON stream and returns the open
// response; the caller reads and closes its body.
func (h *harness) stream(req api.ExecuteRequest) *http.Response {
	h.t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		h.t.Fatal(err)
	}
	hr, err := http.NewRequest(http.MethodPost, h.base+api.RouteExecuteStream, bytes.NewReader(b))
	if err != nil {
		h.t.Fatal(err)
	}
	hr.Header.Set("Content-Type", api.ContentTypeJSON)
	if h.token != "" {
		hr.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.http.Do(hr)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// tryPost is postJSON that reports instead of failing, for goroutines.
func (h *harness) tryPost(path string, v any) (*http.Response, []byte, error) {
	b, _ := json.Marshal(v)
	req, err := http.NewRequest(http.MethodPost, h.base+path, bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// errorOf decodes an error body and checks its status and code.
func errorOf(t testing.TB, resp *http.Response, body []byte, status int, code string) api.ErrorDetail {
	t.Helper()
	var eb api.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil {
		t.Errorf("status %d, body %q is not an error body: %v", resp.StatusCode, body, err)
		return api.ErrorDetail{}
	}
	if resp.StatusCode != status || eb.Error.Code != code {
		t.Errorf("got %d %s (%s), want %d %s", resp.StatusCode, eb.Error.Code, eb.Error.Message, status, code)
	}
	if ct := resp.Header.Get("Content-Type"); ct != api.ContentTypeJSON {
		t.Errorf("error content type %q", ct)
	}
	return eb.Error
}

// containers counts the engine's containers carrying aster.test=label, in
// any state, or in the given states.
func containers(t testing.TB, label string, states ...string) int {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "aster.test="+label)})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	if len(states) == 0 {
		return len(res.Items)
	}
	n := 0
	for _, c := range res.Items {
		for _, st := range states {
			if string(c.State) == st {
				n++
			}
		}
	}
	return n
}

// waitFor polls cond every 50ms until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, what, timeout, cond)
}

// metric returns the value of one sample line of /metrics, or -1.
func (h *harness) metric(name string) float64 {
	h.t.Helper()
	resp, body := h.do(context.Background(), http.MethodGet, api.RouteMetrics, "", nil)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("metrics: %d %s", resp.StatusCode, body)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err == nil {
				return f
			}
		}
	}
	return -1
}

// filesOf reads a directory tree into a files map.
func filesOf(t testing.TB, dir string) map[string]api.File {
	t.Helper()
	out := map[string]api.File{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = api.TextFile(string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

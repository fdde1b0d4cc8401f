package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/docker"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/testkit"
)

// recorder wraps the real executor to learn each run's id (to look for its
// container) and how each Execute ended.
type recorder struct {
	Executor
	mu      sync.Mutex
	output  map[string]bool // runs that have written output
	ids     []string
	results []sandbox.Result
	errs    []error
}

func (r *recorder) RunWithOptions(ctx context.Context, spec sandbox.Spec, opts sandbox.RunOptions) (sandbox.Result, error) {
	spec.ID = sandbox.NewRunID()
	r.mu.Lock()
	r.ids = append(r.ids, spec.ID)
	r.mu.Unlock()
	id, next := spec.ID, spec.OnOutput
	spec.OnOutput = func(s sandbox.Stream, b []byte) {
		r.mu.Lock()
		if r.output == nil {
			r.output = map[string]bool{}
		}
		r.output[id] = true
		r.mu.Unlock()
		if next != nil {
			next(s, b)
		}
	}
	res, err := r.Executor.RunWithOptions(ctx, spec, opts)
	r.mu.Lock()
	r.results = append(r.results, res)
	r.errs = append(r.errs, err)
	r.mu.Unlock()
	return res, err
}

func (r *recorder) lastID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ids) == 0 {
		return ""
	}
	return r.ids[len(r.ids)-1]
}

func (r *recorder) wrote(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.output[id]
}

func (r *recorder) finished() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.results)
}

// engine skips the test under -short and returns the local engine's runtime.
func engine(t *testing.T) *docker.Runtime {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the engine; skipped with -short")
	}
	return sandboxtest.Docker(t)
}

// serveAPI serves the sandbox API (`aster sandbox serve`'s handler) over opts
// on a test server closed at the test's end.
func serveAPI(t *testing.T, opts sandboxapi.Options) *httptest.Server {
	t.Helper()
	orch, err := sandboxapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(orch)
	t.Cleanup(hs.Close)
	return hs
}

type dockerEnv struct {
	rt  *docker.Runtime
	rec *recorder
	srv *Server
}

// newDockerEnv serves the tools over a real Manager on the local engine.
func newDockerEnv(t *testing.T, maxConcurrent, queue int) *dockerEnv {
	t.Helper()
	rt := engine(t)
	mgr, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime: rt, Images: []string{sandboxtest.Image()}, Defaults: config.DefaultLimits(),
		Bounds: config.LimitBounds(), MaxConcurrent: maxConcurrent, QueueSize: queue, QueueTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	ceilings, err := config.DefaultCeilings().Parse()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Executor: mgr}
	srv := newTestServer(t, rec, func(o *Options) {
		o.Images = []string{sandboxtest.Image()}
		o.Ceilings = ceilings
		o.ProgressInterval = 200 * time.Millisecond
		o.Sessions = mgr
		o.MaxSessionsPerConnection = 2
	})
	return &dockerEnv{rt: rt, rec: rec, srv: srv}
}

// httpSession connects a client over streamable HTTP.
func (e *dockerEnv) httpSession(t *testing.T, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hs := httptest.NewServer(e.srv.Handler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, copts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL + Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// live reports whether a container of the run is on the engine.
func (e *dockerEnv) live(t *testing.T, runID string) bool {
	t.Helper()
	ms, err := e.rt.List(context.Background())
	if err != nil {
		t.Fatalf("list sandboxes: %v", err)
	}
	return slices.ContainsFunc(ms, func(m sandbox.Managed) bool { return m.RunID == runID })
}

// waitFor polls cond every 50ms until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, what, timeout, cond)
}

func callExecute(t *testing.T, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, sandbox.WireResult) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: args})
	if err != nil {
		t.Fatalf("call execute: %v", err)
	}
	var w sandbox.WireResult
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatalf("structured content: %v", err)
		}
	}
	return res, w
}

// TestSecurityCasesThroughMCP drives SECURITY.md B1, B2, B9 and D1 through
// the execute tool over streamable HTTP, each followed by a normal job.
func TestSecurityCasesThroughMCP(t *testing.T) {
	e := newDockerEnv(t, 4, 16)
	cs := e.httpSession(t, nil)
	normal := func(t *testing.T) {
		t.Helper()
		res, w := callExecute(t, cs, map[string]any{"argv": []string{"python3", "-c", "print(sum(range(1000)))"}})
		if res.IsError || w.Status != sandbox.StatusOK || w.Stdout != "499500\n" {
			t.Fatalf("the next job did not run normally: %s", textOf(res))
		}
	}

	t.Run("B1 fork bomb", func(t *testing.T) {
		res, w := callExecute(t, cs, map[string]any{
			"script": "f(){ f | f & }; f; sleep 3; echo survived",
			"limits": map[string]any{"timeout": "8s", "pids": 64},
		})
		if res.IsError || w.Status == sandbox.StatusError || w.Status == "" {
			t.Fatalf("fork bomb broke the tool: %s", textOf(res))
		}
		if !strings.Contains(w.Stderr, "fork") {
			t.Fatalf("no fork failure reported: %s", textOf(res))
		}
		if !strings.Contains(textOf(res), "status: ") {
			t.Fatalf("no status in the text: %s", textOf(res))
		}
		waitFor(t, 10*time.Second, "the fork bomb's sandbox to be removed", func() bool { return !e.live(t, e.rec.lastID()) })
		normal(t)
	})

	t.Run("B2 memory", func(t *testing.T) {
		res, w := callExecute(t, cs, map[string]any{
			"argv":   []string{"python3", "-c", "chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))"},
			"limits": map[string]any{"memory": "96m", "timeout": "30s"},
		})
		if w.Status != sandbox.StatusOOM || !w.OOMKilled {
			t.Fatalf("status %q oom_killed=%v, want oom: %s", w.Status, w.OOMKilled, textOf(res))
		}
		if res.IsError {
			t.Fatalf("an OOM is a result, not a tool error: %s", textOf(res))
		}
		if !strings.Contains(textOf(res), "ran out of its 96MiB of memory") {
			t.Fatalf("text does not explain the OOM: %s", textOf(res))
		}
		normal(t)
	})

	t.Run("B9 gigabytes of output", func(t *testing.T) {
		res, w := callExecute(t, cs, map[string]any{
			"argv":   []string{"sh", "-c", "yes stdout-line & yes stderr-line >&2; wait"},
			"limits": map[string]any{"timeout": "60s"},
		})
		if w.Status != sandbox.StatusOutputLimit {
			t.Fatalf("status %q, want output_limit: %.500s", w.Status, textOf(res))
		}
		for _, kept := range []string{w.Stdout, w.Stderr} {
			if len(kept) > (1<<20)+200 {
				t.Fatalf("kept %d bytes of a stream; the cap is 1 MiB", len(kept))
			}
		}
		if !w.StdoutTruncated && !w.StderrTruncated {
			t.Fatal("no stream flagged truncated")
		}
		if w.StdoutBytes+w.StderrBytes > 200<<20 {
			t.Fatalf("job was not ended early: %d + %d bytes", w.StdoutBytes, w.StderrBytes)
		}
		txt := textOf(res)
		if !strings.Contains(txt, "TRUNCATED: only the first and last 512KiB") || !strings.Contains(txt, "wrote more than 64MiB to one output stream") {
			t.Fatalf("truncation not stated plainly: %.400s", txt)
		}
		normal(t)
	})

	t.Run("D1 TCP out", func(t *testing.T) {
		// Documentation (TEST-NET-3) and private addresses: with only lo the
		// kernel answers ENETUNREACH at once, so no packet leaves.
		probe := `
import errno, os, socket
for name, addr in (("public", ("203.0.113.1", 443)), ("private", ("10.255.255.1", 80))):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(addr)
        print(name + "=connected")
    except OSError as e:
        print(name + "=" + errno.errorcode.get(e.errno, str(e.errno)))
print("ifaces=" + ",".join(sorted(os.listdir("/sys/class/net"))))
`
		res, w := callExecute(t, cs, map[string]any{"script": probe, "interpreter": "python3"})
		if w.Status != sandbox.StatusOK {
			t.Fatalf("probe failed: %s", textOf(res))
		}
		for _, want := range []string{"public=ENETUNREACH", "private=ENETUNREACH", "ifaces=lo\n"} {
			if !strings.Contains(w.Stdout, want) {
				t.Fatalf("want %q in %q", want, w.Stdout)
			}
		}
		normal(t)
	})
}

// TestCancelKillsSandbox cancels a running call from the client, on both
// transports, and proves the container is gone right after.
func TestCancelKillsSandbox(t *testing.T) {
	e := newDockerEnv(t, 2, 4)
	sessions := map[string]*mcp.ClientSession{
		"in-memory":       connect(t, e.srv, nil),
		"streamable HTTP": e.httpSession(t, nil),
	}
	for name, cs := range sessions {
		t.Run(name, func(t *testing.T) {
			before := e.rec.finished()
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{
					"argv": []string{"sh", "-c", "echo started; sleep 120"}, "limits": map[string]any{"timeout": "3m"}}})
				errc <- err
			}()
			var id string
			waitFor(t, 60*time.Second, "the job to run", func() bool {
				id = e.rec.lastID()
				return id != "" && e.rec.wrote(id) && e.live(t, id) && e.rec.finished() == before
			})
			start := time.Now()
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("cancelled call returned no error")
			}
			waitFor(t, 15*time.Second, "the cancelled run to end", func() bool { return e.rec.finished() > before })
			waitFor(t, 15*time.Second, "the container to be removed", func() bool { return !e.live(t, id) })
			t.Logf("sandbox gone %s after cancel", time.Since(start).Round(time.Millisecond))
			e.rec.mu.Lock()
			res := e.rec.results[len(e.rec.results)-1]
			e.rec.mu.Unlock()
			if res.Status != sandbox.StatusKilled {
				t.Errorf("cancelled run: status %q (%s), want killed", res.Status, res.Error)
			}
		})
	}
}

// TestProgressNotifications runs a job that prints for a while and checks
// the client hears queued/running/finished with the output so far.
func TestProgressNotifications(t *testing.T) {
	e := newDockerEnv(t, 1, 4)
	var mu sync.Mutex
	var msgs []string
	var last float64
	monotonic := true
	copts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if r.Params.Progress <= last {
			monotonic = false
		}
		last = r.Params.Progress
		msgs = append(msgs, r.Params.Message)
	}}
	for name, cs := range map[string]*mcp.ClientSession{"in-memory": connect(t, e.srv, copts), "streamable HTTP": e.httpSession(t, copts)} {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			msgs, last = nil, 0
			mu.Unlock()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{
				Name:      "execute",
				Arguments: map[string]any{"script": "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.3; done"},
				Meta:      mcp.Meta{"progressToken": "p-" + name},
			})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %v", err, res)
			}
			// The final notification may land just after the result.
			waitFor(t, 5*time.Second, "the finished notification", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(msgs) > 0 && strings.HasPrefix(msgs[len(msgs)-1], "finished: ok")
			})
			mu.Lock()
			defer mu.Unlock()
			all := strings.Join(msgs, "\n")
			if !strings.HasPrefix(msgs[0], "queued") || !strings.Contains(all, "running") || !strings.Contains(all, "last line: tick") {
				t.Errorf("progress messages:\n%s", all)
			}
			if !monotonic {
				t.Errorf("progress did not increase with every notification")
			}
			if len(msgs) < 4 {
				t.Errorf("only %d progress notifications for a 2s run:\n%s", len(msgs), all)
			}
		})
	}
}

// TestBusyIsAToolError fills the only slot (no queue) and checks the next
// call gets a clear tool error, and that the server keeps serving.
func TestBusyIsAToolError(t *testing.T) {
	e := newDockerEnv(t, 1, 0)
	cs := e.httpSession(t, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"sleep", "4"}}})
	}()
	waitFor(t, 60*time.Second, "the first sandbox", func() bool { id := e.rec.lastID(); return id != "" && e.live(t, id) })
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"true"}}})
	if err != nil {
		t.Fatalf("busy must be a tool error, got a protocol error: %v", err)
	}
	if !res.IsError || !strings.HasPrefix(textOf(res), "busy: ") || !strings.Contains(textOf(res), "retry") {
		t.Fatalf("want a busy tool error, got isError=%v %q", res.IsError, textOf(res))
	}
	<-done
	res, w := callExecute(t, cs, map[string]any{"argv": []string{"echo", "after"}})
	if res.IsError || w.Stdout != "after\n" {
		t.Fatalf("server did not recover after busy: %s", textOf(res))
	}
}

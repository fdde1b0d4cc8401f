package mcpserver

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
)

// fakeExecutor records specs and answers with a scripted function, so the
// tool layer is tested without an engine.
type fakeExecutor struct {
	mu    sync.Mutex
	specs []sandbox.Spec
	stdin []string
	run   func(ctx context.Context, spec sandbox.Spec, opts sandbox.RunOptions) (sandbox.Result, error)
}

func (f *fakeExecutor) RunWithOptions(ctx context.Context, spec sandbox.Spec, opts sandbox.RunOptions) (sandbox.Result, error) {
	var in string
	if spec.Stdin != nil {
		b, _ := io.ReadAll(spec.Stdin)
		in = string(b)
	}
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	f.stdin = append(f.stdin, in)
	f.mu.Unlock()
	if f.run != nil {
		return f.run(ctx, spec, opts)
	}
	if opts.Admitted != nil {
		opts.Admitted()
	}
	return sandbox.Result{ID: "r-fake", Status: sandbox.StatusOK, Stdout: sandbox.Output{Data: []byte("hi\n"), TotalBytes: 3},
		Runtime: "fake", Image: spec.Image, Timings: map[string]time.Duration{}}, nil
}

func (f *fakeExecutor) last(t *testing.T) (sandbox.Spec, string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.specs) == 0 {
		t.Fatal("executor was not called")
	}
	return f.specs[len(f.specs)-1], f.stdin[len(f.stdin)-1]
}

func (f *fakeExecutor) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.specs)
}

// testCeilings are small enough to exercise the ceiling checks.
func testCeilings() sandbox.Limits {
	return sandbox.Limits{TimeoutMS: 60_000, MemoryBytes: 1 << 30, MilliCPUs: 2000, Pids: 512,
		OutputBytes: 4 << 20, OutputCeilingBytes: 256 << 20, WorkdirBytes: 512 << 20, TmpBytes: 256 << 20}
}

func newTestServer(t testing.TB, ex Executor, mod func(*Options)) *Server {
	t.Helper()
	o := Options{Executor: ex, Images: []string{"aster-sandbox:latest", "other:1"}, Defaults: config.DefaultLimits(),
		Ceilings: testCeilings(), ProgressInterval: 20 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return s
}

// connect returns a client session on an in-memory transport.
func connect(t *testing.T, s *Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, copts)
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

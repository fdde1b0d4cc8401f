package mcpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkSessionMemory measures what an idle session costs the server:
// heap and goroutine stacks after GC, per session opened (docs/mcp.md,
// SECURITY.md L7). "plain" is an initialize as clients send it; "padded"
// one of 60 KiB of parameters with a 32 KiB header, which the session kept
// whole before the gate cut it down. Run with -benchtime=2000x.
func BenchmarkSessionMemory(b *testing.B) {
	pad := strings.Repeat("p", 10<<10)
	for _, c := range []struct{ name, body, header string }{
		{"plain", initializeWithID(1), ""},
		{"padded", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","_meta":{"p":"` + pad + `"},` +
			`"capabilities":{"experimental":{"a":"` + pad + `","b":"` + pad + `"}},"clientInfo":{"name":"` + pad + `","version":"` + pad + `","title":"` + pad + `"}}}`,
			strings.Repeat("h", 32<<10)},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := newTestServer(b, &fakeExecutor{}, nil)
			srv := httptest.NewServer(s.Handler(HTTPOptions{MaxSessions: 1 << 20, MaxSessionsPerToken: 1 << 20}))
			b.Cleanup(srv.Close)
			open := func() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+Path, strings.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if c.header != "" {
					req.Header.Set("X-Pad", c.header)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get(sessionIDHeader) == "" {
					b.Fatalf("initialize: %d", resp.StatusCode)
				}
			}
			inUse := func() uint64 {
				runtime.GC()
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				return m.HeapInuse + m.StackInuse
			}
			for range 20 {
				open()
			}
			before := inUse()
			b.ResetTimer()
			for range b.N {
				open()
			}
			b.StopTimer()
			b.ReportMetric(float64(int64(inUse())-int64(before))/float64(b.N), "B/session")
		})
	}
}

// BenchmarkSessionCallMemory measures what each call leaves in a session
// that stays open (heap after GC, per ping): the event store's record of
// the call's stream, kept until the session ends before it was bounded.
func BenchmarkSessionCallMemory(b *testing.B) {
	s := newTestServer(b, &fakeExecutor{}, nil)
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	b.Cleanup(srv.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	cs, err := c.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + Path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	inUse := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	for range 100 {
		if err := cs.Ping(b.Context(), nil); err != nil {
			b.Fatal(err)
		}
	}
	before := inUse()
	b.ResetTimer()
	for range b.N {
		if err := cs.Ping(b.Context(), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(int64(inUse())-int64(before))/float64(b.N), "B/call")
}

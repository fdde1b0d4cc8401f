package sandboxapi

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox/docker"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// engineProxy forwards a unix socket to the engine's. Cutting it makes the
// engine vanish for everything behind it — mid-request included — without
// touching the engine other tests share; restoring it brings it back.
type engineProxy struct {
	path, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]struct{}
}

func newEngineProxy(t *testing.T) *engineProxy {
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		target = strings.TrimPrefix(h, "unix://")
	} else if h != "" {
		t.Skipf("the engine proxy needs a unix socket, DOCKER_HOST is %s", h)
	}
	dir, err := os.MkdirTemp("", "aster-proxy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &engineProxy{path: filepath.Join(dir, "engine.sock"), target: target, conns: map[net.Conn]struct{}{}}
	p.start(t)
	t.Cleanup(p.stop)
	return p
}

func (p *engineProxy) start(t *testing.T) {
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// stop closes the listener and every forwarded connection.
func (p *engineProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	os.Remove(p.path)
}

// The engine goes away mid-run: the run in flight ends with an "unavailable"
// error event and its partial output, new runs and /readyz answer 503 with
// Retry-After while /healthz stays up, and when the engine is back the
// service runs jobs again by itself. No sandbox is left behind.
func TestEngineDownAndBack(t *testing.T) {
	t.Parallel()
	_, label := testRuntime(t)
	p := newEngineProxy(t)
	rt, err := docker.New(docker.Options{Host: "unix://" + p.path, InitPath: sandboxtest.InitBinary(t), Labels: map[string]string{"aster.test": label}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	h := newHarness(t, harnessOpts{runtime: rt, label: label, server: func(o *Options) { o.EngineCheckPeriod = 200 * time.Millisecond }})
	h.execute(api.ExecuteRequest{Argv: []string{"true"}})

	// A streamed run is in flight when the engine goes away.
	resp := h.stream(api.ExecuteRequest{Argv: []string{"sh", "-c", "echo started; sleep 60"}})
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.Contains(sc.Text(), "started") {
		t.Fatalf("first event %q", sc.Text())
	}
	p.stop()
	sandboxtest.CheckCutOffStream(t, sc, "the engine")

	// Meanwhile: 503 with Retry-After for runs and readiness, 200 for liveness.
	resp2, body := h.postJSON(api.RouteExecute, api.ExecuteRequest{Argv: []string{"true"}})
	errorOf(t, resp2, body, 503, "unavailable")
	if resp2.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	resp2, body = h.do(context.Background(), http.MethodGet, api.RouteReady, "", nil)
	errorOf(t, resp2, body, 503, "unavailable")
	if resp2, _ = h.do(context.Background(), http.MethodGet, api.RouteHealth, "", nil); resp2.StatusCode != 200 {
		t.Errorf("healthz %d while the engine is away", resp2.StatusCode)
	}
	waitFor(t, 5*time.Second, "aster_engine_up 0", func() bool { return h.metric("aster_engine_up") == 0 })

	// The engine comes back: no restart of the service needed.
	p.start(t)
	t0 := time.Now()
	waitFor(t, 30*time.Second, "a run to succeed again", func() bool {
		resp, body := h.postJSON(api.RouteExecute, api.ExecuteRequest{Argv: []string{"echo", "back"}})
		return resp.StatusCode == 200 && strings.Contains(string(body), `"stdout":"back\n"`)
	})
	t.Logf("recovered %s after the engine came back", time.Since(t0).Round(time.Millisecond))
	if resp2, _ = h.do(context.Background(), http.MethodGet, api.RouteReady, "", nil); resp2.StatusCode != 200 {
		t.Errorf("readyz %d after recovery", resp2.StatusCode)
	}
	waitFor(t, 5*time.Second, "aster_engine_up 1", func() bool { return h.metric("aster_engine_up") == 1 })
	// The sandbox that lost its host ends itself (its stdin closed).
	waitFor(t, 30*time.Second, "no sandbox left", func() bool { return containers(t, label) == 0 })
}

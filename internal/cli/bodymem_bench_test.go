package cli

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testkit"
)

// BenchmarkPeakRSSMaximalBodies measures SECURITY L3: the peak resident
// memory of a real `aster sandbox serve` and `aster mcp --http` child
// process while N clients each send a maximal (60 MiB) JSON body at once,
// each carrying one 45 MiB file (base64). It reports the child's RSS before
// the burst (base), its peak during it (VmHWM, reset before the burst),
// and how many bodies were served and refused with 429. The binary is
// $ASTER_BENCH_BIN (to measure another build, e.g. main's) or this tree's,
// built for the run:
//
//	go test ./internal/cli -run '^$' -bench PeakRSSMaximalBodies -benchtime 1x
func BenchmarkPeakRSSMaximalBodies(b *testing.B) {
	sandboxtest.Docker(b)
	bin := benchBinary(b)
	raw := make([]byte, 45<<20)
	_, _ = rand.Read(raw)
	content := base64.StdEncoding.EncodeToString(raw)
	serveBody, _ := json.Marshal(map[string]any{
		"argv":   []string{"true"},
		"files":  map[string]any{"big.bin": map[string]string{"content": content, "encoding": "base64"}},
		"limits": map[string]string{"workdir_size": "128m", "memory": "256m"},
	})
	mcpBody, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "execute", "arguments": map[string]any{
			"argv": []string{"true"}, "binary_files": map[string]string{"big.bin": content},
			"limits": map[string]int64{"workdir_bytes": 128 << 20, "memory_bytes": 256 << 20},
		}},
	})
	content = ""
	for _, server := range []string{"serve", "mcp"} {
		for _, n := range []int{3, 6} {
			b.Run(fmt.Sprintf("%s/N%d", server, n), func(b *testing.B) {
				for range b.N {
					if server == "serve" {
						measureBodies(b, bin, n, serveBody, serveChild, serveRequest)
					} else {
						measureBodies(b, bin, n, mcpBody, mcpChild, mcpRequest)
					}
				}
			})
		}
	}
}

// benchBinary is $ASTER_BENCH_BIN, else the aster the tests build.
func benchBinary(b *testing.B) string {
	if p := os.Getenv("ASTER_BENCH_BIN"); p != "" {
		return p
	}
	return binary(b)
}

type child struct {
	cmd  *exec.Cmd
	base string // URL
	// session is the MCP session id, "" for serve.
	session string
	mu      sync.Mutex
	id      int
}

func (c *child) nextID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id++
	return 100 + c.id
}

func startChild(b *testing.B, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(b.Context(), bin, args...)
	cmd.Env = os.Environ()
	if os.Getenv("ASTER_INIT_PATH") == "" && os.Getenv("ASTER_BENCH_BIN") == "" {
		cmd.Env = append(cmd.Env, "ASTER_INIT_PATH="+sandboxtest.InitBinary(b))
	}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
		if b.Failed() {
			b.Logf("child output:\n%s", logs.String())
		}
	})
	return cmd
}

func waitHealthy(b *testing.B, url string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("%s not healthy after 30s", url)
}

func serveChild(b *testing.B, bin string) *child {
	addr := testkit.FreeAddr(b)
	cmd := startChild(b, bin, "sandbox", "serve", "--addr", addr, "--max-concurrent", "8", "--queue", "16")
	c := &child{cmd: cmd, base: "http://" + addr}
	waitHealthy(b, c.base+"/healthz")
	return c
}

func mcpChild(b *testing.B, bin string) *child {
	addr := testkit.FreeAddr(b)
	cmd := startChild(b, bin, "mcp", "--http", addr, "--max-concurrent", "8", "--queue", "16")
	c := &child{cmd: cmd, base: "http://" + addr}
	waitHealthy(b, c.base+"/healthz")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`
	resp, err := mcpPost(c, []byte(init))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.session = resp.Header.Get("Mcp-Session-Id")
	resp, err = mcpPost(c, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c
}

func mcpPost(c *child, body []byte) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	// A refusal comes before the body is sent (http.DefaultTransport
	// waits a second for it).
	req.Header.Set("Expect", "100-continue")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	return http.DefaultClient.Do(req)
}

// serveRequest and mcpRequest send one body and say whether it was served
// (ran) or refused with 429.
func serveRequest(c *child, body []byte) (int, string, error) {
	req, _ := http.NewRequest(http.MethodPost, c.base+"/v1/execute", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func mcpRequest(c *child, body []byte) (int, string, error) {
	// Each call in flight needs its own id: the body's first field.
	body = bytes.Replace(body, []byte(`{"id":2,`), fmt.Appendf(nil, `{"id":%d,`, c.nextID()), 1)
	resp, err := mcpPost(c, body)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && !strings.Contains(string(b), `"status":"ok"`) {
		return 500, string(b), nil
	}
	return resp.StatusCode, string(b), nil
}

func measureBodies(b *testing.B, bin string, n int, body []byte, start func(*testing.B, string) *child,
	send func(*child, []byte) (int, string, error)) {
	b.StopTimer()
	c := start(b, bin)
	pid := c.cmd.Process.Pid
	base := procStatusKB(b, pid, "VmRSS")
	// Peak RSS from here on (Linux: 5 resets VmHWM to the current RSS).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		b.Fatalf("reset VmHWM: %v", err)
	}
	b.StartTimer()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, text, err := send(c, body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				b.Errorf("request: %v", err)
				return
			}
			if code != http.StatusOK && code != http.StatusTooManyRequests {
				b.Errorf("answer %d: %.300s", code, text)
			}
			codes[code]++
		}()
	}
	wg.Wait()
	b.StopTimer()
	peak := procStatusKB(b, pid, "VmHWM")
	b.ReportMetric(float64(base)/1024, "base-RSS-MiB")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(codes[http.StatusOK]), "served")
	b.ReportMetric(float64(codes[http.StatusTooManyRequests]), "refused")
}

// procStatusKB reads one "Key: N kB" line of /proc/PID/status.
func procStatusKB(b *testing.B, pid int, key string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

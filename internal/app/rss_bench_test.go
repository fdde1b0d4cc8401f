package app

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/store"
)

const rssChildEnv = "ASTER_TEST_WEBHOOK_RSS_CHILD"

// noGitHub is the child's GitHub: no delivery in the measurement is signed, so no job runs.
type noGitHub struct{}

func (noGitHub) Repo(int64, string, string) (RepoAPI, error) {
	return nil, errors.New("no GitHub in this process")
}
func (noGitHub) BotLogin(context.Context) (string, error) { return "aster[bot]", nil }

// TestWebhookRSSChild is the process BenchmarkWebhookHeldBodiesRSS measures: `aster app
// serve`'s Serve on a loopback port with its defaults, until its stdin closes. It is skipped
// unless the benchmark starts it.
func TestWebhookRSSChild(t *testing.T) {
	if os.Getenv(rssChildEnv) == "" {
		t.Skip("started by BenchmarkWebhookHeldBodiesRSS")
	}
	dir := t.TempDir()
	st, err := store.Open(context.Background(), store.Options{Path: filepath.Join(dir, "aster.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Printf("listening %s\n", ln.Addr())
	if err := Serve(ctx, ServeOptions{Listener: ln, WebhookSecret: []byte(testSecret), Store: st, GitHub: noGitHub{},
		Reviewer: &scripted{}, TempDir: dir, ShutdownGrace: time.Second}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkWebhookHeldBodiesRSS measures the peak RSS (VmHWM) of a child process serving
// the App while 20 clients each send 24 MiB of a 24 MiB + 1 byte webhook body with a
// well-formed but wrong signature and hold the last byte back: SECURITY H7's case, with
// everything that can arrive arriving. Run with -benchtime=1x; it reports the child's idle
// and peak RSS in MiB.
func BenchmarkWebhookHeldBodiesRSS(b *testing.B) {
	const clients, bodyBytes = 20, 24 << 20
	for range b.N {
		idle, peak := measureHeldBodies(b, clients, bodyBytes)
		b.ReportMetric(float64(idle)/(1<<20), "idle-rss-MiB")
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
	}
}

func measureHeldBodies(b *testing.B, clients int, bodyBytes int64) (idle, peak int64) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWebhookRSSChild$", "-test.v")
	cmd.Env = append(os.Environ(), rssChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	addr := ""
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		b.Fatal("child did not start")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	time.Sleep(500 * time.Millisecond)
	idle = vmHWM(b, cmd.Process.Pid)

	chunk := bytes.Repeat([]byte(" "), 1<<20)
	sig := github.Sign([]byte("not the secret"), chunk)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			fmt.Fprintf(conn, "POST /webhook HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nX-GitHub-Event: pull_request\r\n"+
				"X-GitHub-Delivery: rss-%d\r\nX-Hub-Signature-256: %s\r\nContent-Length: %d\r\n\r\n", addr, i, sig, bodyBytes+1)
			for sent := int64(0); sent < bodyBytes; sent += int64(len(chunk)) {
				if _, err := conn.Write(chunk); err != nil {
					return // refused: the server answered and closed
				}
			}
		}()
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // let the server take in what was written
	peak = vmHWM(b, cmd.Process.Pid)
	for _, c := range conns {
		c.Close()
	}
	return idle, peak
}

// vmHWM is a process's peak resident set size in bytes, from /proc.
func vmHWM(b *testing.B, pid int) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM")
	return 0
}

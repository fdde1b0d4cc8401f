package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testkit"
)

// runCLI runs the aster command line in-process.
func runCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(t.Context(), args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

func TestMCPRefusals(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": dir}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "--http", "0.0.0.0:0"}, "refusing to serve MCP without bearer tokens on a non-loopback address"},
		{[]string{"mcp", "--http", ":0"}, "non-loopback"},
		{[]string{"mcp", "--token-file", tokens}, "--token-file needs --http"},
		{[]string{"mcp", "--http", "0.0.0.0:0", "--token-file", tokens}, "shorter than 16"},
		{[]string{"mcp", "--max-memory", "lots"}, "not a size"},
		{[]string{"mcp", "--sandbox-url", "ftp://x", "--http", "127.0.0.1:0"}, "--sandbox-url"},
		{[]string{"mcp", "--allow-dir", filepath.Join(dir, "missing")}, "is not a directory"},
		{[]string{"mcp", "--http", "127.0.0.1:0", "--max-sessions", "0"}, "mcp max_sessions \"0\""},
		{[]string{"mcp", "--http", "127.0.0.1:0", "--session-timeout", "1ms"}, "mcp session_timeout"},
		{[]string{"mcp", "--max-sessions-per-token", "5"}, "--max-sessions-per-token needs --http"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, env, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("aster %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, ExitUsage, c.want)
		}
	}
}

// binary builds cmd/aster once per test process, with aster-init beside it.
func binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds aster and needs the engine; skipped with -short")
	}
	return sandboxtest.AsterBinary(t)
}

// asterCmd prepares the built binary with a clean environment: no config
// file, containers labelled for this test.
func asterCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "ASTER_LABELS=aster.test=" + filepath.Base(t.Name())}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		cmd.Env = append(cmd.Env, "DOCKER_HOST="+h)
	}
	if img := os.Getenv("ASTER_TEST_IMAGE"); img != "" {
		cmd.Env = append(cmd.Env, "ASTER_IMAGES="+img)
	}
	return cmd
}

// TestMCPStdioBinary drives the built `aster mcp` over stdio with the SDK's
// CommandTransport: list the tools, run code, close, and leave nothing behind.
func TestMCPStdioBinary(t *testing.T) {
	sandboxtest.Docker(t)
	cmd := asterCmd(t, "mcp")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) == 0 || tools.Tools[0].Name != "execute" {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{
		"argv": []string{"python3", "-c", "import sys; print(sys.stdin.read().upper())"}, "stdin": "hello",
	}})
	if err != nil {
		t.Fatalf("execute: %v\n%s", err, stderr.String())
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError || sc["status"] != "ok" || sc["stdout"] != "HELLO\n" {
		t.Fatalf("execute result: %+v %v", res, sc)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"true"}, "limits": map[string]any{"memory": "1t"}}})
	if err != nil || !res.IsError {
		t.Fatalf("over-ceiling call: %v %+v", err, res)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Fatalf("server panicked:\n%s", stderr.String())
	}
	assertNoTestContainers(t)
}

// Over stdio, `aster mcp` is an editor's child: with the engine down it stays up and
// answers each tool call with the reason; an image off the allowlist gets Aster's
// unknown_image answer, not a schema message.
func TestMCPStdioEngineDown(t *testing.T) {
	cmd := asterCmd(t, "mcp", "--docker-host", "unix:///nonexistent/docker.sock")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect with the engine down: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	for range 2 { // the server is still there for the second call
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"true"}}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "unavailable") || !strings.Contains(text(res), "docker") {
			t.Fatalf("execute with the engine down: %v %q\n%s", err, text(res), stderr.String())
		}
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"true"}, "image": "evil:latest"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "unknown_image") || !strings.Contains(text(res), "allowlist") {
		t.Fatalf("an image off the allowlist: %v %q", err, text(res))
	}
}

// TestMCPHTTPBinary starts `aster mcp --http` with a token file and checks
// auth and a tool call over streamable HTTP.
func TestMCPHTTPBinary(t *testing.T) {
	sandboxtest.Docker(t)
	const token = "mcp-binary-test-token-0123456789"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# test\n"+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	cmd := asterCmd(t, "mcp", "--http", addr, "--token-file", tokens, "--max-sessions-per-token", "2")
	cmd.Env = append(cmd.Env, "ASTER_MCP_MAX_SESSIONS=50")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("aster mcp --http exited with %v after SIGINT\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("aster mcp --http did not stop on SIGINT\n%s", stderr.String())
		}
	})
	url := "http://" + addr + "/mcp"
	waitHTTP(t, "http://"+addr+"/healthz", &stderr)

	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: status %d, want 401", resp.StatusCode)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tokenTransport(token)}}, nil)
	if err != nil {
		t.Fatalf("connect with token: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"script": "echo via http", "interpreter": "sh"}})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError || sc["stdout"] != "via http\n" {
		t.Fatalf("execute result: %+v", res)
	}
	// /metrics: the run just made and the open session, behind the token.
	mreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	mreq.Header.Set("Authorization", "Bearer "+token)
	mresp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if mresp.StatusCode != http.StatusOK || !strings.Contains(string(mb), `aster_sandbox_runs_total{status="ok"} 1`) ||
		!strings.Contains(string(mb), "aster_mcp_sessions 1") {
		t.Errorf("/metrics: %d\n%s", mresp.StatusCode, mb)
	}

	// SECURITY L7: the token's second session is its last; the third is
	// refused with a JSON-RPC error that names the cap.
	initialize := func() (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(
			`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := initialize(); code != http.StatusOK {
		t.Fatalf("second session: %d %s", code, body)
	}
	if code, body := initialize(); code != http.StatusTooManyRequests || !strings.Contains(body, `"id":5`) || !strings.Contains(body, "--max-sessions-per-token") {
		t.Errorf("third session: %d %s", code, body)
	}
	if !strings.Contains(stderr.String(), "max_sessions=50") {
		t.Errorf("ASTER_MCP_MAX_SESSIONS is not in the start line:\n%s", stderr.String())
	}
}

type tokenTransport string

func (tt tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(tt))
	return http.DefaultTransport.RoundTrip(r)
}

func waitHTTP(t *testing.T, url string, logs fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not up: %v\n%s", url, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertNoTestContainers checks that no sandbox labelled for this test is
// left (the subprocess labels its containers with ASTER_LABELS).
func assertNoTestContainers(t *testing.T) {
	t.Helper()
	api, err := client.New(client.WithHostFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	res, err := api.ContainerList(t.Context(), client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", "aster.test="+filepath.Base(t.Name())),
	})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	if len(res.Items) > 0 {
		t.Fatalf("%d containers left behind, first %s", len(res.Items), res.Items[0].ID)
	}
}

// syncBuffer collects output from many goroutines while the test reads it.
type syncBuffer = testkit.SyncBuffer

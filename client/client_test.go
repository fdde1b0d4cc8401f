package client

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/openapitest"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/testkit"
	"github.com/asterhq/aster/internal/workspace"
)

// server starts a real orchestrator over the local engine and returns its URL.
func server(t *testing.T, maxConcurrent, queue int, tokens *sandboxapi.Tokens) (string, *sandbox.Manager) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the container engine (skipped with -short)")
	}
	rt := sandboxtest.Docker(t)
	mgr, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime: rt, Images: []string{sandboxtest.Image()}, Defaults: config.DefaultLimits(), Bounds: config.LimitBounds(),
		MaxConcurrent: maxConcurrent, QueueSize: queue, QueueTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	ceil, _ := config.DefaultCeilings().Parse()
	validator := gate.NewValidator(gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()}), nil)
	srv, err := sandboxapi.New(sandboxapi.Options{Manager: mgr, Tokens: tokens, Ceilings: ceil, Validator: validator})
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Serve(t, srv.Serve).URL, mgr
}

func newClient(t *testing.T, url, token string) *Client {
	t.Helper()
	// Every call is checked against the API's OpenAPI description.
	spec, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{BaseURL: url, Token: token, HTTPClient: spec.Client(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExecute(t *testing.T) {
	t.Parallel()
	url, _ := server(t, 4, 16, nil)
	c := newClient(t, url, "")
	ctx := t.Context()
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	ready, err := c.Ready(ctx)
	if err != nil || ready.Status != "ready" || ready.MaxConcurrent != 4 {
		t.Fatalf("ready %+v %v", ready, err)
	}
	out, err := c.Execute(ctx, ExecuteOptions{
		Argv: []string{"sh", "-c", `cat a.txt; od -An -tx1 b.bin; od -An -tx1; echo "$X"; exit 2`},
		Job: Job{
			Files:  map[string][]byte{"a.txt": []byte("ünïcode\n"), "b.bin": {0xff, 0}},
			Stdin:  []byte{0xfe, 0x01},
			Env:    map[string]string{"X": "env"},
			Limits: api.Limits{Timeout: "10s", Memory: "128m", CPUs: "0.5", Pids: "64"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	if r.Status != api.StatusExitNonzero || r.ExitCode != 2 || out.RunID != r.ID || r.ID == "" {
		t.Errorf("result %+v run %s", r, out.RunID)
	}
	if want := "ünïcode\n ff 00\n fe 01\nenv\n"; string(out.Stdout) != want || r.Stdout != want {
		t.Errorf("stdout %q, want %q", out.Stdout, want)
	}
	// Binary output comes back as bytes.
	out, err = c.Execute(ctx, ExecuteOptions{Argv: []string{"printf", `\377\000`}})
	if err != nil || !bytes.Equal(out.Stdout, []byte{0xff, 0}) || out.Result.StdoutEncoding != "base64" {
		t.Errorf("binary stdout %q %v", out.Stdout, err)
	}
}

func TestExecuteStreaming(t *testing.T) {
	t.Parallel()
	url, _ := server(t, 2, 4, nil)
	c := newClient(t, url, "")
	var mu sync.Mutex
	var order []string
	out, err := c.Execute(t.Context(), ExecuteOptions{
		Argv: []string{"sh", "-c", "echo a; sleep 0.3; echo b >&2; sleep 0.3; echo c"},
		Job: Job{OnOutput: func(s api.Stream, data []byte) {
			mu.Lock()
			order = append(order, string(s)+":"+string(data))
			mu.Unlock()
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ""); got != "stdout:a\nstderr:b\nstdout:c\n" {
		t.Errorf("streamed %q", got)
	}
	if string(out.Stdout) != "a\nc\n" || string(out.Stderr) != "b\n" {
		t.Errorf("result %+v", out.Result)
	}
}

// A snapshot goes as application/x-tar with the spec in a header when the
// spec is small, and as multipart when it is not; both arrive intact.
func TestSnapshotEncodings(t *testing.T) {
	t.Parallel()
	url, _ := server(t, 2, 4, nil)
	c := newClient(t, url, "")
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "pkg"), 0o755)
	os.WriteFile(filepath.Join(dir, "pkg", "f.txt"), []byte("in the snapshot"), 0o644)
	for name, env := range map[string]map[string]string{
		"header":    {"SMALL": "é"},
		"multipart": {"BIG": strings.Repeat("x", 20<<10)},
	} {
		var tarball bytes.Buffer
		if _, _, err := workspace.PackDir(dir, &tarball, workspace.Caps{}); err != nil {
			t.Fatal(err)
		}
		out, err := c.Execute(t.Context(), ExecuteOptions{
			Argv: []string{"sh", "-c", `cat pkg/f.txt; echo " ${#BIG} $SMALL"`},
			Job:  Job{Snapshot: &tarball, Env: env},
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := "in the snapshot 0 é\n"
		if name == "multipart" {
			want = "in the snapshot 20480 \n"
		}
		if got := string(out.Stdout); got != want {
			t.Errorf("%s: stdout %q, want %q", name, got, want)
		}
	}
	if _, err := c.Execute(t.Context(), ExecuteOptions{Argv: []string{"true"}, Job: Job{Snapshot: &bytes.Buffer{}, Files: map[string][]byte{"a": nil}}}); !errors.Is(err, api.ErrInvalidSpec) {
		t.Errorf("files and snapshot: %v", err)
	}
}

func TestTest(t *testing.T) {
	t.Parallel()
	url, _ := server(t, 2, 4, nil)
	c := newClient(t, url, "")
	var tarball bytes.Buffer
	if _, _, err := workspace.PackDir("../internal/testrun/testdata/pyfail", &tarball, workspace.Caps{}); err != nil {
		t.Fatal(err)
	}
	out, err := c.Test(t.Context(), TestOptions{Job: Job{Snapshot: &tarball}})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Tests
	if s.Framework != "pytest" || s.Format != api.ReportJUnitXML || s.Passed != 1 || s.Failed != 2 || len(s.Failures) != 2 || out.Result.Status != api.StatusExitNonzero {
		t.Errorf("summary %+v status %s", s, out.Result.Status)
	}
	if len(out.Command) == 0 || out.RunID == "" {
		t.Errorf("command %q run %q", out.Command, out.RunID)
	}
}

// Validate runs a real analyzer of the gate over a snapshot and decodes its
// findings into the api types; only the changed file is read and reported.
func TestValidate(t *testing.T) {
	t.Parallel()
	url, _ := server(t, 2, 4, nil)
	c := newClient(t, url, "")
	dir := t.TempDir()
	shell := "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
	os.WriteFile(filepath.Join(dir, "changed.py"), []byte(shell), 0o644)
	os.WriteFile(filepath.Join(dir, "old.py"), []byte(shell), 0o644)
	var tarball bytes.Buffer
	if _, _, err := workspace.PackDir(dir, &tarball, workspace.Caps{}); err != nil {
		t.Fatal(err)
	}
	out, err := c.Validate(t.Context(), ValidateOptions{Snapshot: &tarball, Analyzers: []string{"bandit"}, ChangedFiles: []string{"changed.py"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Analyzers) != 1 || out.Analyzers[0].Name != "bandit" || out.Analyzers[0].Status != api.AnalyzerOK {
		t.Fatalf("analyzers %+v", out.Analyzers)
	}
	var reported []string
	for _, f := range out.Findings {
		if f.RuleID == "" || f.StartLine == 0 || f.Fingerprint == "" {
			t.Errorf("finding without its rule, line or fingerprint: %+v", f)
		}
		if f.Reported {
			reported = append(reported, f.Path+":"+f.RuleID)
		}
	}
	// bandit reads the changed files only: every finding it makes is reported.
	if out.Summary.Reported != len(reported) || len(reported) == 0 || out.Summary.Total != len(out.Findings) {
		t.Errorf("summary %+v, reported %v", out.Summary, reported)
	}
	for _, r := range reported {
		if !strings.HasPrefix(r, "changed.py:") {
			t.Errorf("reported %s, which is not in a changed file", r)
		}
	}
	if _, err := c.Validate(t.Context(), ValidateOptions{}); !errors.Is(err, api.ErrInvalidSpec) {
		t.Errorf("no snapshot: %v", err)
	}
	if _, err := c.Validate(t.Context(), ValidateOptions{Snapshot: bytes.NewReader(tarball.Bytes()), Analyzers: []string{"no-such-analyzer"}}); !errors.Is(err, api.ErrInvalidSpec) {
		t.Errorf("an unknown analyzer: %v", err)
	}
}

// Errors unwrap to the api error classes, with the server's Retry-After.
func TestErrorsClassified(t *testing.T) {
	t.Parallel()
	tokens, _ := sandboxapi.ParseTokens(strings.NewReader("client-test-token-123456\n"))
	url, mgr := server(t, 1, 0, tokens)
	ctx := t.Context()
	anon := newClient(t, url, "")
	if _, err := anon.Execute(ctx, ExecuteOptions{Argv: []string{"true"}}); !errors.Is(err, api.ErrUnauthorized) {
		t.Errorf("no token: %v", err)
	}
	c := newClient(t, url, "client-test-token-123456")
	var ae *APIError
	if _, err := c.Execute(ctx, ExecuteOptions{Argv: nil}); !errors.Is(err, api.ErrInvalidSpec) || !errors.As(err, &ae) || ae.Status != 400 {
		t.Errorf("no argv: %v", err)
	}
	if _, err := c.Execute(ctx, ExecuteOptions{Argv: []string{"true"}, Job: Job{Image: "busybox"}}); !errors.Is(err, api.ErrUnknownImage) {
		t.Errorf("unknown image: %v", err)
	}
	if _, err := c.Execute(ctx, ExecuteOptions{Argv: []string{"true"}, Job: Job{Limits: api.Limits{Memory: "1099511627776"}}}); !errors.Is(err, api.ErrInvalidSpec) || !strings.Contains(err.Error(), "ceiling") {
		t.Errorf("over the ceiling: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Execute(ctx, ExecuteOptions{Argv: []string{"sleep", "3"}})
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for mgr.Stats().Running == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	_, err := c.Execute(ctx, ExecuteOptions{Argv: []string{"true"}})
	if !errors.Is(err, api.ErrBusy) || !errors.As(err, &ae) || ae.RetryAfter < time.Second || !IsRetryable(err) {
		t.Errorf("busy: %v (%+v)", err, ae)
	}
	if err := <-done; err != nil {
		t.Errorf("first run: %v", err)
	}
	// Nobody listening: unavailable, retryable.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	gone := "http://" + ln.Addr().String()
	ln.Close()
	if _, err := newClient(t, gone, "").Execute(ctx, ExecuteOptions{Argv: []string{"true"}}); !errors.Is(err, api.ErrUnavailable) || !IsRetryable(err) {
		t.Errorf("no server: %v", err)
	}
}

func TestHelpers(t *testing.T) {
	t.Parallel()
	if got := asciiJSON([]byte(`{"a":"é😀x"}`)); got != `{"a":"\u00e9\ud83d\ude00x"}` {
		t.Errorf("asciiJSON = %s", got)
	}
	p := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(p, []byte("# comment\n\n  the-token-value-123  \nsecond\n"), 0o600)
	if tok, err := ReadTokenFile(p); err != nil || tok != "the-token-value-123" {
		t.Errorf("ReadTokenFile = %q %v", tok, err)
	}
	for _, bad := range []string{"", "ftp://x", "http://"} {
		if _, err := New(Options{BaseURL: bad}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}

package runtimekit_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// startInit runs the real aster-init as a plain subprocess (not PID 1, no
// container) and returns a Session on its stdio. It tests the protocol and the
// Result end to end without an engine; isolation is tested by the security suite.
func startInit(t *testing.T) (*runtimekit.Session, string) {
	t.Helper()
	work := t.TempDir()
	cmd := exec.CommandContext(t.Context(), sandboxtest.InitBinary(t), "-work", work)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	destroy := func() { once.Do(func() { cmd.Process.Kill(); stdin.Close() }) }
	t.Cleanup(func() { destroy(); cmd.Wait() })
	return &runtimekit.Session{W: stdin, R: initproto.NewReader(stdout), Destroy: destroy}, work
}

func job(argv ...string) sandbox.Job {
	return sandbox.Job{Argv: argv, Limits: sandbox.DefaultLimits()}
}

func TestSessionOutputAndExit(t *testing.T) {
	s, _ := startInit(t)
	j := job("sh", "-c", "echo out; echo err >&2; exit 7")
	var mu sync.Mutex
	var streamed []string
	j.OnOutput = func(st sandbox.Stream, p []byte) {
		mu.Lock()
		streamed = append(streamed, string(st)+":"+string(p))
		mu.Unlock()
	}
	res, err := s.Run(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 7 || string(res.Stdout.Data) != "out\n" || string(res.Stderr.Data) != "err\n" {
		t.Fatalf("%+v", res.Wire())
	}
	if len(streamed) != 2 {
		t.Fatalf("streamed %v", streamed)
	}
}

func TestSessionStdinWorkspaceEnv(t *testing.T) {
	s, work := startInit(t)
	j := job("sh", "-c", `cat input.txt; read line; echo "stdin=$line"; echo "env=$GREETING"; pwd`)
	j.Workspace = sandbox.Workspace{Files: map[string][]byte{"sub/input.txt": []byte("from-file\n")}}
	j.Workdir = "sub"
	j.Stdin = strings.NewReader("from-stdin\n")
	j.Env = map[string]string{"GREETING": "hi"}
	res, err := s.Run(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	// Outside a container /work is the test's temp dir; the job header still
	// names /work/sub, which init creates under its -work root only when run
	// in a sandbox. Here the directory is the absolute path in the header.
	want := "from-file\nstdin=from-stdin\nenv=hi\n"
	if res.Status != sandbox.StatusOK || !strings.HasPrefix(string(res.Stdout.Data), want) {
		t.Fatalf("got %q (%s), want prefix %q; work=%s", res.Stdout.Data, res.Error, want, work)
	}
}

func TestSessionTimeout(t *testing.T) {
	s, _ := startInit(t)
	j := job("sleep", "30")
	j.Limits.TimeoutMS = 300
	start := time.Now()
	res, err := s.Run(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusTimeout || time.Since(start) > 5*time.Second {
		t.Fatalf("%+v after %s", res.Wire(), time.Since(start))
	}
}

func TestSessionOutputCeiling(t *testing.T) {
	s, _ := startInit(t)
	j := job("sh", "-c", "yes")
	j.Limits.OutputBytes = 4096
	j.Limits.OutputCeilingBytes = 1 << 20
	res, err := s.Run(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOutputLimit || !res.Stdout.Truncated || res.Stdout.TotalBytes != 1<<20 || len(res.Stdout.Data) > 4200 {
		t.Fatalf("status %s truncated %v total %d kept %d", res.Status, res.Stdout.Truncated, res.Stdout.TotalBytes, len(res.Stdout.Data))
	}
}

func TestSessionExecFailure(t *testing.T) {
	s, _ := startInit(t)
	res, err := s.Run(t.Context(), job("no-such-command-anywhere"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 127 || !strings.Contains(string(res.Stderr.Data), "not found") {
		t.Fatalf("%+v", res.Wire())
	}
}

func TestSessionSignal(t *testing.T) {
	s, _ := startInit(t)
	res, err := s.Run(t.Context(), job("sh", "-c", "kill -SEGV $$"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusKilled || res.Signal != "SIGSEGV" || res.ExitCode != -1 {
		t.Fatalf("%+v", res.Wire())
	}
}

func TestSessionCancel(t *testing.T) {
	s, _ := startInit(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err := s.Run(ctx, job("sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusKilled || !strings.Contains(res.Error, "cancel") {
		t.Fatalf("%+v", res.Wire())
	}
}

// A lying or broken init cannot make the host hang or accept nonsense.
func TestSessionProtocolViolations(t *testing.T) {
	cases := map[string]func(w *initproto.Writer){
		"garbage result": func(w *initproto.Writer) { w.WriteFrame(initproto.TypeResult, []byte(`{"exit_code":999}`)) },
		"host frame":     func(w *initproto.Writer) { w.WriteFrame(initproto.TypeJob, []byte(`{}`)) },
		"eof":            func(w *initproto.Writer) {},
		// A run without egress or export has no business with their frames.
		"tunnel without egress": func(w *initproto.Writer) {
			w.WriteFrame(initproto.TypeTunnelOpen, initproto.EncodeTunnelOpen(initproto.TunnelOpen{ID: 1, Port: 443, Host: "a.example"}))
		},
		"export not asked": func(w *initproto.Writer) { w.WriteFrame(initproto.TypeExport, []byte("x")) },
	}
	for name, write := range cases {
		t.Run(name, func(t *testing.T) {
			pr, pw, _ := os.Pipe()
			go func() {
				write(initproto.NewWriter(pw))
				pw.Close()
			}()
			destroyed := false
			s := &runtimekit.Session{W: discard{}, R: initproto.NewReader(pr), Destroy: func() { destroyed = true }, HelloSeen: true}
			res, err := s.Run(t.Context(), job("true"))
			if res.Status != sandbox.StatusError || !errors.Is(err, sandbox.ErrProtocol) || !destroyed {
				t.Fatalf("status %s err %v destroyed %v", res.Status, err, destroyed)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// The documented default working directory, written out, is the workspace root.
func TestSessionWorkdirSpelledOut(t *testing.T) {
	for _, dir := range []string{"/work", "/work/", ""} {
		s, work := startInit(t)
		j := job("sh", "-c", "pwd")
		j.Workdir = dir
		res, err := s.Run(t.Context(), j)
		if err != nil || res.Status != sandbox.StatusOK || strings.TrimSpace(string(res.Stdout.Data)) != work {
			t.Fatalf("workdir %q: %v %+v, want %s", dir, err, res.Wire(), work)
		}
	}
}

func TestAwaitHelloTimeout(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	err := runtimekit.AwaitHello(t.Context(), initproto.NewReader(pr), 20*time.Millisecond, func() string { return " (console: stuck)" })
	if !errors.Is(err, runtimekit.ErrNoHello) || !errors.Is(err, sandbox.ErrProtocol) || !strings.Contains(err.Error(), "did not say hello within 20ms (console: stuck)") {
		t.Fatalf("silent sandbox: %v", err)
	}
}

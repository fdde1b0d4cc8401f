package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// engineRestartLock serialises the tests that restart an engine, across test
// processes.
const engineRestartLock = "/tmp/aster-engine-restart.lock"

// engineTestImage is a tiny image (one static program) imported into the
// private engine, so it needs nothing from a registry or from the shared
// engine's images.
const engineTestImage = "aster-engine-test:latest"

// privateEngine is a dockerd (with its own containerd) that this test starts
// on its own socket and directories. Stopping and restarting it is a real
// engine restart — the containers it runs die, its API vanishes and returns —
// without disturbing the engine every other test shares.
type privateEngine struct {
	t    *testing.T
	dir  string
	sock string
	cmd  *exec.Cmd
	done chan error
}

func startPrivateEngine(t *testing.T) *privateEngine {
	t.Helper()
	if _, err := exec.LookPath("dockerd"); err != nil {
		t.Fatalf("ASTER_TEST_ENGINE_RESTART=1 needs dockerd on PATH: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Fatal("ASTER_TEST_ENGINE_RESTART=1 needs root to run a private dockerd")
	}
	dir, err := os.MkdirTemp("", "aster-engine-")
	if err != nil {
		t.Fatal(err)
	}
	e := &privateEngine{t: t, dir: dir, sock: filepath.Join(dir, "docker.sock")}
	t.Cleanup(func() {
		e.stop()
		// The engine's state is ours alone; a failed removal only leaves a temp dir.
		_ = os.RemoveAll(dir)
	})
	e.start()
	return e
}

func (e *privateEngine) host() string { return "unix://" + e.sock }

func (e *privateEngine) start() {
	e.t.Helper()
	logf, err := os.OpenFile(filepath.Join(e.dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.CommandContext(context.WithoutCancel(e.t.Context()), "dockerd",
		"--host", e.host(),
		"--data-root", filepath.Join(e.dir, "data"),
		"--exec-root", filepath.Join(e.dir, "exec"),
		"--pidfile", filepath.Join(e.dir, "dockerd.pid"),
		"--bridge", "none", "--iptables=false", "--ip-masq=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a ^C to the test does not reach it first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start dockerd: %v", err)
	}
	e.cmd, e.done = cmd, make(chan error, 1)
	go func() { e.done <- cmd.Wait() }()
	api := engineAPI(e.t, e.host())
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := api.Ping(ctx, client.PingOptions{})
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("private dockerd not up: %v\n%s", err, e.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends dockerd as an operator would (SIGTERM: it stops its containers
// and its containerd), and waits for it.
func (e *privateEngine) stop() {
	if e.cmd == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(60 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
	}
	e.cmd = nil
}

func (e *privateEngine) logTail() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
	return tail(string(b), 3000)
}

// importSleeper builds a static program that prints "started", sleeps for
// its argument and prints "done", and imports it as engineTestImage.
func (e *privateEngine) importSleeper() {
	e.t.Helper()
	src := filepath.Join(e.dir, "sleeper")
	if err := os.MkdirAll(src, 0o755); err != nil {
		e.t.Fatal(err)
	}
	prog := `package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	d, err := time.ParseDuration(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("started")
	time.Sleep(d)
	fmt.Println("done")
}
`
	os.WriteFile(filepath.Join(src, "main.go"), []byte(prog), 0o644)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module sleeper\n\ngo 1.21\n"), 0o644)
	build := exec.CommandContext(e.t.Context(), "go", "build", "-trimpath", "-o", "sleep", ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		e.t.Fatalf("build the sleeper: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(src, "sleep"))
	if err != nil {
		e.t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "bin/sleep", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))})
	tw.Write(bin)
	tw.Close()
	api := engineAPI(e.t, e.host())
	rc, err := api.ImageImport(e.t.Context(), client.ImageImportSource{Source: &buf, SourceName: "-"}, engineTestImage, client.ImageImportOptions{})
	if err != nil {
		e.t.Fatalf("import the test image: %v", err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
}

// lockFile takes an exclusive flock on path until the test ends.
func lockFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}

// SECURITY G5: the engine is stopped and restarted while a run is in
// flight. The in-flight run ends with a result or an "unavailable" error;
// meanwhile runs and /readyz answer 503 with Retry-After and /healthz 200;
// once the engine is back the service runs jobs again by itself, and no
// sandbox is left on the engine.
func TestServeEngineRestart(t *testing.T) {
	if os.Getenv("ASTER_TEST_ENGINE_RESTART") != "1" {
		t.Skip("set ASTER_TEST_ENGINE_RESTART=1 to stop and restart a (private) container engine under a running server")
	}
	lockFile(t, engineRestartLock)
	eng := startPrivateEngine(t)
	eng.importSleeper()
	labelEnv, _ := uniqueLabel(t)
	p := startServe(t, []string{"DOCKER_HOST=" + eng.host(), labelEnv},
		"--images", engineTestImage, "--max-concurrent", "2", "--reaper-period", "1s", "--reaper-grace", "0s")
	quick := api.ExecuteRequest{Argv: []string{"/bin/sleep", "10ms"}}
	if st, _, body, err := p.post(context.Background(), api.RouteExecute, quick); err != nil || st != 200 || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("before the restart: %d %s %v", st, body, err)
	}

	// A streamed run is in flight when the engine stops.
	b, _ := json.Marshal(api.ExecuteRequest{Argv: []string{"/bin/sleep", "60s"}})
	req, _ := http.NewRequest(http.MethodPost, p.url+api.RouteExecuteStream, bytes.NewReader(b))
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	resp, err := p.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	inflight := make(chan []api.Event, 1)
	started := make(chan struct{})
	go func() {
		evs, err := readNDJSON(resp.Body, func(ev api.Event) {
			if ev.Type == api.EventStdout && strings.HasPrefix(string(ev.Data), "started") {
				close(started)
			}
		})
		if err != nil {
			t.Errorf("in-flight stream: %v", err)
		}
		inflight <- evs
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the in-flight run did not start")
	}

	t0 := time.Now()
	eng.stop()
	t.Logf("engine stopped in %s", time.Since(t0).Round(time.Millisecond))
	evs := <-inflight
	if len(evs) == 0 || evs[len(evs)-1].Type != api.EventResult {
		t.Fatalf("the in-flight run got no result: %+v", evs)
	}
	var res sandbox.WireResult
	json.Unmarshal(evs[len(evs)-1].Result, &res)
	if res.Status == sandbox.StatusOK || !strings.HasPrefix(res.Stdout, "started") {
		t.Errorf("in-flight run: %s %q %q", res.Status, res.Stdout, res.Error)
	}
	t.Logf("in-flight run ended %s: %s", res.Status, res.Error)

	// While it is down.
	st, retry, body, err := p.post(context.Background(), api.RouteExecute, quick)
	if err != nil || st != 503 || retry == "" || !strings.Contains(string(body), `"unavailable"`) {
		t.Errorf("while the engine is down: %d Retry-After %q %s %v", st, retry, body, err)
	}
	for path, want := range map[string]int{api.RouteReady: 503, api.RouteHealth: 200} {
		r, err := p.http.Get(p.url + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, r.StatusCode, want)
		}
	}

	// It comes back; the server recovers without a restart.
	eng.start()
	t1 := time.Now()
	eventually(t, 60*time.Second, "a run to succeed after the restart", func() bool {
		st, _, body, err := p.post(context.Background(), api.RouteExecute, quick)
		return err == nil && st == 200 && strings.Contains(string(body), `"status":"ok"`)
	})
	t.Logf("recovered %s after the engine came back", time.Since(t1).Round(time.Millisecond))
	eapi := engineAPI(t, eng.host())
	eventually(t, 30*time.Second, "no sandbox left on the engine", func() bool {
		return labelled(t, eapi, "aster.managed=true", "") == 0
	})
	if r, err := p.http.Get(p.url + api.RouteReady); err != nil || r.StatusCode != 200 {
		t.Errorf("readyz after recovery: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	if err := p.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(30 * time.Second); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("server exit: %v", err)
	}
	if t.Failed() {
		t.Logf("private dockerd log:\n%s", eng.logTail())
	}
}

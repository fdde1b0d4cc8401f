package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

var asterBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aster-bin-")
	if err != nil {
		panic(err)
	}
	asterBin = filepath.Join(dir, "aster")
	out, err := exec.Command("go", "build", "-o", asterBin, ".").CombinedOutput()
	if err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// aster runs the built binary with the test's label on every sandbox.
func aster(t *testing.T, label string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return runWith(t, append(os.Environ(), "ASTER_INIT_PATH="+sandboxtest.InitBinary(t), "ASTER_LABELS=aster.test="+label), strings.NewReader(stdin), args...)
}

func engine(t *testing.T) *client.Client {
	t.Helper()
	sandboxtest.Docker(t) // skips or fails without an engine
	c, err := client.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// containers lists the labelled containers of one test.
func containers(t *testing.T, c *client.Client, label string) []string {
	t.Helper()
	res, err := c.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "aster.test="+label)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range res.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

func TestExecJSONHasEveryField(t *testing.T) {
	engine(t)
	code, out, stderr := aster(t, "json", "", "exec", "--json", "--", "true")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not one JSON object: %v: %q", err, out)
	}
	for _, k := range []string{"id", "status", "exit_code", "signal", "stdout", "stderr", "stdout_truncated", "stderr_truncated",
		"duration_ms", "cpu_ms", "peak_memory_bytes", "runtime", "image", "image_digest", "stdout_encoding", "stderr_encoding", "oom_killed", "error", "timings_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("field %q missing", k)
		}
	}
	var w sandbox.WireResult
	json.Unmarshal([]byte(out), &w)
	if w.Status != "ok" || w.ExitCode != 0 || w.ID == "" || w.Runtime != "docker" || w.Image == "" || !strings.HasPrefix(w.ImageDigest, "sha256:") || w.PeakMemoryBytes <= 0 {
		t.Fatalf("fields not filled: %+v", w)
	}
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("more than one line on stdout: %q", out)
	}
}

func TestExecTextModeAndExitCodes(t *testing.T) {
	engine(t)
	cases := []struct {
		args       []string
		stdin      string
		code       int
		out, inErr string
	}{
		{[]string{"--", "sh", "-c", "echo out; echo err >&2"}, "", 0, "out\n", "err"},
		{[]string{"--", "sh", "-c", "exit 3"}, "", 3, "", ""},
		{[]string{"--timeout", "1s", "--", "sleep", "30"}, "", 124, "", "timeout"},
		{[]string{"--memory", "64m", "--", "python3", "-c", "b = bytearray(1 << 30)"}, "", 137, "", "oom"},
		{[]string{"--output-limit", "1k", "--output-ceiling", "64k", "--", "yes"}, "", 125, "", "output_limit"},
		{[]string{"--stdin", "-", "--", "tr", "a-z", "A-Z"}, "shout\n", 0, "SHOUT\n", ""},
		{[]string{"--env", "WHO=world", "--", "sh", "-c", "echo hello $WHO"}, "", 0, "hello world\n", ""},
		{[]string{"--", "sh", "-c", "kill -TERM $$"}, "", 143, "", "killed"},
		{[]string{"--", "no-such-binary"}, "", 127, "", "not found"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, stderr := aster(t, "text", c.stdin, append([]string{"exec"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, stderr)
			}
			if c.out != "" && out != c.out {
				t.Fatalf("stdout %q, want %q", out, c.out)
			}
			if !strings.Contains(stderr, c.inErr) {
				t.Fatalf("stderr %q lacks %q", stderr, c.inErr)
			}
		})
	}
}

func TestExecDirAndFiles(t *testing.T) {
	engine(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "pkg"), 0o755)
	os.WriteFile(filepath.Join(dir, "pkg", "data.txt"), []byte("from dir\n"), 0o644)
	extra := filepath.Join(t.TempDir(), "extra.py")
	os.WriteFile(extra, []byte("print('from file')\n"), 0o644)
	code, out, stderr := aster(t, "dir", "", "exec", "--dir", dir, "--file", extra+":tools/run.py", "--workdir", "pkg", "--", "sh", "-c", "cat data.txt; python3 ../tools/run.py")
	if code != 0 || out != "from dir\nfrom file\n" {
		t.Fatalf("exit %d out %q err %q", code, out, stderr)
	}
}

// A kill -9 of a running `aster exec` leaks nothing: the sandbox notices its
// host is gone and ends. If the sandbox itself is wedged (here: frozen), the
// labelled container stays until `aster sandbox reap` removes it once its
// deadline has passed.
func TestKill9ThenReap(t *testing.T) {
	api := engine(t)
	t.Run("self-cleaning", func(t *testing.T) {
		label := "kill9-self-" + sandbox.NewRunID()
		cmd := startExec(t, label, "60s")
		// Kill it once its sandbox runs the job. (A kill between create and
		// start leaves a created container that never runs: the reaper's
		// deadline covers that one, as in the next case.)
		waitRunning(t, api, waitContainers(t, api, label, 1)[0])
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		waitContainers(t, api, label, 0)
	})
	t.Run("stdin-never-read", func(t *testing.T) {
		// SECURITY.md K5: the job never reads its stdin, so aster-init is
		// blocked writing it and never reads the host's end of the stream;
		// the sandbox must still end within seconds of the caller's death.
		label := "kill9-stdin-" + sandbox.NewRunID()
		big := filepath.Join(t.TempDir(), "stdin")
		if err := os.WriteFile(big, make([]byte, 16<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := startExec(t, label, "300s", "--stdin", big)
		waitRunning(t, api, waitContainers(t, api, label, 1)[0])
		time.Sleep(time.Second) // the stdin pipe fills up
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		waitContainers(t, api, label, 0)
	})
	t.Run("wedged-then-reaped", func(t *testing.T) {
		label := "kill9-wedged-" + sandbox.NewRunID()
		cmd := startExec(t, label, "2s")
		ids := waitContainers(t, api, label, 1)
		// A created container cannot be paused until it runs.
		waitRunning(t, api, ids[0])
		if _, err := api.ContainerPause(t.Context(), ids[0], client.ContainerPauseOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { api.ContainerRemove(context.Background(), ids[0], client.ContainerRemoveOptions{Force: true}) })
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		// Before its deadline the reaper keeps it.
		code, out, stderr := aster(t, label, "", "sandbox", "reap", "--grace", "0s")
		if code != 0 || len(containers(t, api, label)) != 1 || !strings.Contains(out, "keep") {
			t.Fatalf("reaped before the deadline: exit %d out %q err %q", code, out, stderr)
		}
		// Deadline: timeout 2s + kill grace + host grace 5s + allowance 1s.
		time.Sleep(9 * time.Second)
		code, out, _ = aster(t, label, "", "sandbox", "reap", "--dry-run", "--grace", "0s")
		if code != 0 || !strings.Contains(out, "would remove") || len(containers(t, api, label)) != 1 {
			t.Fatalf("dry run: exit %d out %q", code, out)
		}
		code, out, stderr = aster(t, label, "", "sandbox", "reap", "--grace", "0s")
		if code != 0 || !strings.Contains(out, "removed") {
			t.Fatalf("reap: exit %d out %q err %q", code, out, stderr)
		}
		if left := containers(t, api, label); len(left) != 0 {
			t.Fatalf("still present after reap: %v", left)
		}
	})
}

func startExec(t *testing.T, label, timeout string, flags ...string) *exec.Cmd {
	t.Helper()
	args := append(append([]string{"exec", "--timeout", timeout}, flags...), "--", "sleep", "600")
	cmd := exec.Command(asterBin, args...)
	cmd.Env = append(os.Environ(), "ASTER_INIT_PATH="+sandboxtest.InitBinary(t), "ASTER_LABELS=aster.test="+label, "ASTER_REAPER_ALLOWANCE=1s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// waitRunning waits until the container is running.
func waitRunning(t *testing.T, api *client.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := api.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
		if err == nil && res.Container.State != nil && res.Container.State.Running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s not running: %v", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitContainers(t *testing.T, api *client.Client, label string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ids := containers(t, api, label)
		if len(ids) == n {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d containers labelled %s, have %v", n, label, ids)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// hostileRepo makes a git repository that commits an aster.yaml (body) and a
// fake-runtime.sh that touches marker, with a second commit changing a file:
// what `git clone X && cd X && aster review` would find.
func hostileRepo(t *testing.T, body string) (dir, marker string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed")
	}
	dir = t.TempDir()
	marker = filepath.Join(t.TempDir(), "fake-runtime-ran")
	files := map[string]string{
		"aster.yaml":      body,
		"fake-runtime.sh": "#!/bin/sh\ntouch " + marker + "\nexit 1\n",
		"notes.txt":       "one\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "-q", "-am", "head")
	return dir, marker
}

// The repository's ./aster.yaml asks for the oci runtime with its own script
// as the runtime binary: run as root on the host if obeyed.
const repoRuntimeConfig = "runtime: oci\noci:\n  runtime: ./fake-runtime.sh\n"

// assertIgnored checks that the command named no file, warned about the
// repository's aster.yaml, and never ran its script.
func assertIgnored(t *testing.T, dir, marker, stderr string) {
	t.Helper()
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the repository's fake-runtime.sh ran on the host\nstderr: %s", stderr)
	}
	for _, want := range []string{
		"aster: configuration: no configuration file; defaults and ASTER_* variables only\n",
		"aster: warning: " + filepath.Join(dir, "aster.yaml") + " is ignored",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// SECURITY.md O1: a repository's aster.yaml configures nothing, whichever
// command runs in its directory: aster exec, aster review and the MCP execute
// tool run on the default runtime and the repository's script never runs.
func TestRepositoryConfigIsIgnored(t *testing.T) {
	sandboxtest.Docker(t)

	t.Run("exec", func(t *testing.T) {
		dir, marker := hostileRepo(t, repoRuntimeConfig)
		cmd := asterCmd(t, "exec", "--", "echo", "ran")
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		assertIgnored(t, dir, marker, stderr.String())
		if err != nil || stdout.String() != "ran\n" {
			t.Fatalf("exec: %v, stdout %q\nstderr: %s", err, stdout.String(), stderr.String())
		}
		assertNoTestContainers(t)
	})

	t.Run("review", func(t *testing.T) {
		dir, marker := hostileRepo(t, repoRuntimeConfig)
		cmd := asterCmd(t, "review", "--base", "HEAD~1", "--format", "json")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		assertIgnored(t, dir, marker, stderr.String())
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			t.Fatalf("review: %v\nstderr: %s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "gitleaks ok") || !strings.Contains(stderr.String(), "finding(s) on the change") {
			t.Fatalf("review did not finish:\n%s", stderr.String())
		}
		assertNoTestContainers(t)
	})

	t.Run("mcp", func(t *testing.T) {
		dir, marker := hostileRepo(t, repoRuntimeConfig)
		cmd := asterCmd(t, "mcp")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, stderr.String())
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"echo", "ran"}}})
		if err != nil {
			t.Fatalf("execute: %v\n%s", err, stderr.String())
		}
		sc, _ := res.StructuredContent.(map[string]any)
		if err := cs.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		assertIgnored(t, dir, marker, stderr.String())
		if res.IsError || sc["status"] != "ok" || sc["stdout"] != "ran\n" || sc["runtime"] != "docker" {
			t.Fatalf("execute result: %+v %v\nstderr: %s", res, sc, stderr.String())
		}
		assertNoTestContainers(t)
	})
}

// SECURITY.md O1 and O2: a repository's aster.yaml that names a model server
// with llm.base_url switches no model step on, and the user's ambient API key
// never reaches that server.
func TestRepositoryConfigSendsNoKey(t *testing.T) {
	sandboxtest.Docker(t)
	var hits atomic.Int64
	var sawKey atomic.Bool
	const key = "sk-ambient-user-key-5Qm2Xv8Lr1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), key) {
			sawKey.Store(true)
		}
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	dir, _ := hostileRepo(t, "llm:\n  provider: openai\n  model: m\n  base_url: "+srv.URL+"/v1\n  max_retries: 0\n")
	cmd := asterCmd(t, "review", "--base", "HEAD~1", "--format", "json")
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "OPENAI_API_KEY="+key)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("review: %v\nstderr: %s", err, stderr.String())
	}
	if n := hits.Load(); n != 0 || sawKey.Load() {
		t.Fatalf("the repository's model server got %d request(s) (key sent: %v)", n, sawKey.Load())
	}
	var rep review.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.Model.Status != review.ModelSkipped {
		t.Errorf("model step %q (%v), want skipped:\n%.2000s", rep.Model.Status, err, stdout.String())
	}
	if !strings.Contains(stderr.String(), "aster: warning: "+filepath.Join(dir, "aster.yaml")+" is ignored") {
		t.Errorf("no warning:\n%s", stderr.String())
	}
}

// Every command that runs things says at start, on stderr and in one line,
// which configuration file it uses (none, or the file and who named it), and
// writes nothing of it on stdout: aster mcp speaks its protocol there. Each
// case fails on a flag after loading, before anything starts.
func TestEveryCommandNamesItsConfiguration(t *testing.T) {
	cases := map[string][]string{
		"exec":          {"exec", "--memory", "lots", "--", "true"},
		"review":        {"review", filepath.Join(t.TempDir(), "not-a-repo")},
		"sandbox serve": {"sandbox", "serve", "--max-memory", "lots"},
		"sandbox reap":  {"sandbox", "reap", "--grace", "x"},
		"app serve":     {"app", "serve"},
		"mcp":           {"mcp", "--max-memory", "lots"},
	}
	cfg := filepath.Join(t.TempDir(), "aster.yaml")
	if err := os.WriteFile(cfg, []byte("limits:\n  timeout: 10s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"HOME": t.TempDir()}
			code, stdout, stderr := runCLI(t, env, args...)
			first, _, _ := strings.Cut(stderr, "\n")
			if code != ExitUsage || stdout != "" || first != "aster: configuration: no configuration file; defaults and ASTER_* variables only" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			if n := strings.Count(stderr, "configuration:"); n != 1 {
				t.Errorf("%d configuration lines:\n%s", n, stderr)
			}
			code, stdout, stderr = runCLI(t, env, append([]string{"--config", cfg}, args...)...)
			if first, _, _ = strings.Cut(stderr, "\n"); code != ExitUsage || stdout != "" || first != "aster: configuration: "+cfg+" (named by --config)" {
				t.Fatalf("--config: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			// As a log record when the logs are JSON, and not at all below their level.
			code, _, stderr = runCLI(t, map[string]string{"HOME": env["HOME"], "ASTER_CONFIG": cfg}, append([]string{"--log-format", "json"}, args...)...)
			if first, _, _ = strings.Cut(stderr, "\n"); code != ExitUsage || !strings.HasPrefix(first, "{") ||
				!strings.Contains(first, `"msg":"configuration: `+cfg+` (named by ASTER_CONFIG)"`) || !strings.Contains(first, `"file":"`+cfg+`"`) {
				t.Fatalf("json: exit %d, stderr %q", code, stderr)
			}
			if _, _, stderr = runCLI(t, env, append([]string{"--log-level", "warn"}, args...)...); strings.Contains(stderr, "configuration:") {
				t.Errorf("--log-level warn still names the configuration: %q", stderr)
			}
		})
	}
}

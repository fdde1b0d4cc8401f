package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/testkit"
)

// asterBinary builds cmd/aster once per test process.
func asterBinary(t *testing.T) string {
	t.Helper()
	return sandboxtest.AsterBinary(t)
}

// server is one `aster app serve` process.
type server struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	url  string
}

func startServer(t *testing.T, args []string, env []string, logs *syncBuffer, url string) *server {
	t.Helper()
	cmd := exec.Command(asterBinary(t), args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, logs: logs, url: url}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = s.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = s.cmd.Process.Kill()
			}
		}
	})
	testkit.WaitFor(t, "aster app serve to answer /healthz", 30*time.Second, func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// TestKillMidJobThenRestart runs the real binary against the fake GitHub with real
// sandboxes, kills it with SIGKILL while a review is in its static checks (after the check
// run was created), and starts it again: the interrupted job runs again at once and the
// pull request ends with exactly one review, one summary and one check run (SECURITY G4).
func TestKillMidJobThenRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Docker engine and builds the binary")
	}
	t0 := time.Now()
	sandboxtest.Docker(t) // skip or fail without an engine, as the other sandbox tests
	initBin := sandboxtest.InitBinary(t)
	asterBinary(t)
	t.Logf("binaries built in %s", time.Since(t0).Round(time.Millisecond))
	fake := githubtest.New(t, githubtest.Options{})
	git := githubtest.NewGitRepo(t)
	fake.AddRepo(githubtest.Repository{Owner: "acme", Name: "widgets", Git: git})
	// A slow repository-defined analyzer holds the review in its static checks long
	// enough to kill the process there.
	slow := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"slow"}},"results":[]}]}`
	cfg := "analyzers:\n  slow:\n    command: [\"sh\", \"-c\", " + jsonString("sleep 4; echo '"+slow+"'") + "]\n    format: sarif\n"
	base := git.Commit("", "base", map[string]string{".aster.yml": cfg, "README.md": "# widgets\n"})
	head := git.Commit(base, "change", map[string]string{"app.py": "import subprocess\n\ndef run(cmd):\n    subprocess.call(cmd, shell=True)\n"})
	fake.AddPullRequest("acme", "widgets", githubtest.PullRequest{Number: 1, Title: "Runner", BaseRef: "main", BaseSHA: base, HeadRef: "x", HeadSHA: head})

	dir := t.TempDir()
	keyFile, secretFile, db := filepath.Join(dir, "app.pem"), filepath.Join(dir, "secret"), filepath.Join(dir, "aster.db")
	if err := os.WriteFile(keyFile, fake.PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t)
	label := "aster.test=" + sandboxtest.Label(t)
	t.Cleanup(func() {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	args := []string{"app", "serve", "--addr", addr, "--app-id", fmt.Sprint(fake.AppID()), "--private-key", keyFile,
		"--webhook-secret-file", secretFile, "--github-api-url", fake.URL(), "--db", db, "--init-path", initBin,
		"--workers", "1", "--log-level", "debug"}
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "ASTER_LABELS=" + label, "ASTER_REPLICA_ID=kill-test"}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	url := "http://" + addr
	logs := &syncBuffer{}
	t1 := time.Now()
	first := startServer(t, args, env, logs, url)
	t.Logf("first server up in %s", time.Since(t1).Round(time.Millisecond))

	body := mustJSON(t, prPayload(t, 1, head, base, fake.InstallationID()))
	req, _ := http.NewRequest(http.MethodPost, url+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(github.EventHeader, "pull_request")
	req.Header.Set(github.DeliveryHeader, "kill-1")
	req.Header.Set(github.SignatureHeader, github.Sign([]byte(testSecret), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delivery: %d", resp.StatusCode)
	}
	testkit.WaitFor(t, "the review to be in its static checks", 60*time.Second, func() bool {
		runs := fake.CheckRuns("acme", "widgets")
		return len(runs) == 1 && runs[0].Status == "in_progress"
	})
	time.Sleep(time.Second) // well inside the 4-second analyzer
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	if n := len(fake.Reviews("acme", "widgets", 1)); n != 0 {
		t.Fatalf("a review was posted before the kill (%d): the kill did not land mid-job", n)
	}

	t2 := time.Now()
	startServer(t, args, env, logs, url)
	t.Logf("second server up in %s", time.Since(t2).Round(time.Millisecond))
	testkit.WaitFor(t, "the interrupted review to finish after the restart", 3*time.Minute, func() bool {
		runs := fake.CheckRuns("acme", "widgets")
		return len(runs) >= 1 && runs[len(runs)-1].Status == "completed"
	})
	t.Logf("interrupted review finished %s after the restart", time.Since(t2).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // anything duplicated would show up now
	if n := len(fake.Reviews("acme", "widgets", 1)); n != 1 {
		t.Fatalf("%d reviews after kill -9 and restart, want exactly 1", n)
	}
	if n := len(fake.IssueComments("acme", "widgets", 1)); n != 1 {
		t.Fatalf("%d summary comments, want 1", n)
	}
	runs := fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Conclusion != "failure" {
		t.Fatalf("check runs: %+v (want the one created before the kill, completed)", runs)
	}

	hist := exec.Command(asterBinary(t), "app", "history", "--db", db, "--json")
	var histErr strings.Builder
	hist.Stderr = &histErr // the configuration line; the records are on stdout
	out, err := hist.Output()
	if err != nil {
		t.Fatalf("aster app history: %v\n%s%s", err, out, histErr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 {
		t.Fatalf("history: %d records, want 1:\n%s", len(lines), out)
	}
	var rec store.ReviewRecord
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Outcome != store.OutcomePosted || rec.Attempt != 2 || rec.HeadSHA != head {
		t.Fatalf("history record: %+v (want posted by the second attempt)", rec)
	}
	table, err := exec.Command(asterBinary(t), "app", "history", "--db", db).CombinedOutput()
	if err != nil || !strings.Contains(string(table), "acme/widgets#1") {
		t.Fatalf("history table: %v\n%s", err, table)
	}
	t.Logf("aster app history:\n%s", table)

	text := logs.String()
	for _, s := range []string{"ghs_", "-----BEGIN", testSecret} {
		if strings.Contains(text, s) {
			t.Errorf("the server's log holds a secret (%.10q…)", s)
		}
	}
	for _, tok := range fake.Tokens() {
		if strings.Contains(text, tok.Token) {
			t.Error("the server's log holds an installation token")
		}
	}
	if !strings.Contains(text, "jobs interrupted by a previous process run again") {
		t.Errorf("the restart did not report the interrupted job:\n%s", text)
	}
	if t.Failed() {
		t.Logf("server log:\n%s", text)
	}
}

// prPayload is GitHub's example "opened" delivery pointed at acme/widgets#number.
func prPayload(t *testing.T, number int, head, base string, installation int64) map[string]any {
	t.Helper()
	return (&harness{t: t, owner: "acme", repo: "widgets"}).prExample("opened", number, head, base, installation)
}

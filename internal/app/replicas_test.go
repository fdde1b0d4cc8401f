package app

import (
	"bytes"
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
	"github.com/asterhq/aster/internal/store/storetest"
	"github.com/asterhq/aster/internal/testkit"
)

// TestTwoReplicasOnePostgres runs two real `aster app serve` processes against one
// Postgres database and the fake GitHub: 24 distinct deliveries (one pull request
// each) and 8 repeated delivery ids, spread over both replicas, give 24 reviews and
// none twice, although one replica is killed with SIGKILL halfway through. The
// survivor drains the queue; the killed replica, started again under its own replica
// id, runs the jobs it was holding at once (another replica would take them over only
// after --job-timeout plus five minutes), and they still post exactly once.
func TestTwoReplicasOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres and a Docker engine, and builds the binary")
	}
	dbURL := storetest.PostgresURL(t) // skips without ASTER_TEST_POSTGRES_URL
	sandboxtest.Docker(t)             // skip or fail without an engine, as the other sandbox tests
	initBin := sandboxtest.InitBinary(t)
	asterBinary(t)

	prs, dups := 24, 8
	if v := os.Getenv("ASTER_TEST_REPLICA_PRS"); v != "" { // a quicker look while debugging
		fmt.Sscan(v, &prs)
		dups = min(dups, prs)
	}
	fake := githubtest.New(t, githubtest.Options{})
	git := githubtest.NewGitRepo(t)
	fake.AddRepo(githubtest.Repository{Owner: "acme", Name: "widgets", Git: git})
	// A quick analyzer reports one finding on the changed line, so that every review
	// posts something (an inline comment) that a second run would post again.
	sarif := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"quick","rules":[{"id":"Q1"}]}},"results":[{"ruleId":"Q1","level":"warning","message":{"text":"quick finding"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"%s"},"region":{"startLine":1}}}]}]}]}`
	script := "for f in f*.py; do :; done; printf '" + sarif + "' \"$f\""
	cfg := "analyzers:\n  quick:\n    command: [\"sh\", \"-c\", " + jsonString(script) + "]\n    format: sarif\n"
	base := git.Commit("", "base", map[string]string{".aster.yml": cfg, "README.md": "# widgets\n"})
	heads := make([]string, prs+1)
	for n := 1; n <= prs; n++ {
		heads[n] = git.Commit(base, fmt.Sprintf("change %d", n), map[string]string{fmt.Sprintf("f%d.py", n): fmt.Sprintf("x = %d\n", n)})
		fake.AddPullRequest("acme", "widgets", githubtest.PullRequest{Number: n, Title: fmt.Sprintf("Change %d", n), BaseRef: "main", BaseSHA: base, HeadRef: fmt.Sprintf("c%d", n), HeadSHA: heads[n]})
	}

	dir := t.TempDir()
	keyFile, secretFile := filepath.Join(dir, "app.pem"), filepath.Join(dir, "secret")
	if err := os.WriteFile(keyFile, fake.PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	label := "aster.test=" + sandboxtest.Label(t)
	t.Cleanup(func() {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	replica := func(id string, logs *syncBuffer) (*server, string) {
		addr := testkit.FreeAddr(t)
		args := []string{"app", "serve", "--addr", addr, "--app-id", fmt.Sprint(fake.AppID()), "--private-key", keyFile,
			"--webhook-secret-file", secretFile, "--github-api-url", fake.URL(), "--init-path", initBin,
			"--workers", "2", "--replica-id", id, "--log-level", "debug"}
		env := []string{"HOME=" + filepath.Join(dir, id), "PATH=" + os.Getenv("PATH"), "ASTER_LABELS=" + label, "ASTER_DATABASE_URL=" + dbURL}
		if h := os.Getenv("DOCKER_HOST"); h != "" {
			env = append(env, "DOCKER_HOST="+h)
		}
		url := "http://" + addr
		return startServer(t, args, env, logs, url), url
	}
	logsA, logsB, logsA2 := &syncBuffer{}, &syncBuffer{}, &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica-a log:\n%s\nreplica-b log:\n%s\nreplica-a after restart:\n%s", logsA.String(), logsB.String(), logsA2.String())
		}
	})
	a, urlA := replica("replica-a", logsA)
	_, urlB := replica("replica-b", logsB)

	deliver := func(url, id string, n int) {
		t.Helper()
		body := mustJSON(t, prPayload(t, n, heads[n], base, fake.InstallationID()))
		req, _ := http.NewRequest(http.MethodPost, url+"/webhook", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(github.EventHeader, "pull_request")
		req.Header.Set(github.DeliveryHeader, id)
		req.Header.Set(github.SignatureHeader, github.Sign([]byte(testSecret), body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("delivery %s: %v", id, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("delivery %s: %d", id, resp.StatusCode)
		}
	}
	// reviewed counts the pull requests whose check run is completed, and the most
	// reviews posted on one pull request.
	reviewed := func() (total, most int) {
		done := map[string]bool{}
		for _, r := range fake.CheckRuns("acme", "widgets") {
			if r.Status == "completed" {
				done[r.HeadSHA] = true
			}
		}
		for n := 1; n <= prs; n++ {
			if done[heads[n]] {
				total++
			}
			most = max(most, len(fake.Reviews("acme", "widgets", n)))
		}
		return total, most
	}

	t0 := time.Now()
	// Even pull requests through one replica, odd through the other; each repeated
	// delivery goes to the replica that did not take it first.
	urls := [2]string{urlA, urlB}
	for n := 1; n <= prs; n++ {
		deliver(urls[n%2], fmt.Sprintf("delivery-%d", n), n)
		if n <= dups {
			deliver(urls[(n+1)%2], fmt.Sprintf("delivery-%d", n), n)
		}
	}
	t.Logf("%d deliveries accepted in %s", prs+dups, time.Since(t0).Round(time.Millisecond))

	testkit.WaitFor(t, "half of the reviews", 5*time.Minute, func() bool { n, _ := reviewed(); return n >= prs/2 })
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	atKill, _ := reviewed()
	t.Logf("replica-a killed after %s with %d reviews posted", time.Since(t0).Round(time.Millisecond), atKill)

	// The survivor drains what nobody held; what replica-a held waits for it.
	var stalled int
	last, since := -1, time.Now()
	testkit.WaitFor(t, "replica-b to drain the queue", 5*time.Minute, func() bool {
		n, _ := reviewed()
		if n != last {
			last, since = n, time.Now()
		}
		stalled = n
		return n == prs || time.Since(since) > 8*time.Second
	})
	t.Logf("replica-b alone brought the count to %d", stalled)

	t2 := time.Now()
	replica("replica-a", logsA2)
	testkit.WaitFor(t, "every pull request to be reviewed", 5*time.Minute, func() bool { n, _ := reviewed(); return n == prs })
	t.Logf("all %d reviews posted %s after replica-a came back (%s in all)", prs, time.Since(t2).Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	time.Sleep(3 * time.Second) // a duplicate would show up now

	total, most := reviewed()
	if total != prs || most != 1 {
		t.Fatalf("%d pull requests reviewed, at most %d reviews on one; want %d and 1", total, most, prs)
	}
	runs := map[string]int{}
	for _, r := range fake.CheckRuns("acme", "widgets") {
		runs[r.HeadSHA]++
		if r.Status != "completed" {
			t.Errorf("check run %d on %s left %s", r.ID, r.HeadSHA, r.Status)
		}
	}
	for n := 1; n <= prs; n++ {
		if r := fake.Reviews("acme", "widgets", n); len(r) != 1 {
			t.Errorf("pull request %d: %d reviews, want 1", n, len(r))
		}
		switch {
		case runs[heads[n]] == 0:
			t.Errorf("pull request %d: no check run", n)
		case runs[heads[n]] > 1:
			t.Errorf("pull request %d: %d check runs on its head, want 1", n, runs[heads[n]])
		}
		if c := len(fake.IssueComments("acme", "widgets", n)); c != 1 {
			t.Errorf("pull request %d: %d summary comments, want 1", n, c)
		}
	}
	if stalled < prs && !strings.Contains(logsA2.String(), "jobs interrupted by a previous process run again") {
		t.Errorf("replica-a held jobs when it was killed, but did not run them again:\n%s", logsA2.String())
	}
}

package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/testkit"
)

// aster app serve refuses bad settings with exit 2 and a clear line, before it binds,
// opens a database or contacts an engine; nothing secret is echoed.
func TestAppServeBadFlags(t *testing.T) {
	dir := t.TempDir()
	key, secret, empty := filepath.Join(dir, "k.pem"), filepath.Join(dir, "s"), filepath.Join(dir, "empty")
	_ = os.WriteFile(key, []byte("not a key"), 0o600)
	_ = os.WriteFile(secret, []byte("s3cret-value\n"), 0o600)
	_ = os.WriteFile(empty, []byte(" \n"), 0o600)
	base := []string{"app", "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "a.db")}
	cases := []struct {
		args []string
		want string
	}{
		{base, "app-id"},
		{append(base, "--app-id", "x", "--private-key", key, "--webhook-secret-file", secret), "app-id"},
		{append(base, "--app-id", "1"), "private-key"},
		{append(base, "--app-id", "1", "--private-key", key), "webhook-secret-file"},
		{append(base, "--app-id", "1", "--private-key", filepath.Join(dir, "missing"), "--webhook-secret-file", secret), "no such file"},
		{append(base, "--app-id", "1", "--private-key", key, "--webhook-secret-file", empty), "is empty"},
		{append(base, "--app-id", "1", "--private-key", key, "--webhook-secret-file", secret), "not an RSA PEM key"},
		{append(base, "--app-id", "1", "--private-key", key, "--webhook-secret-file", secret, "--workers", "0"), "workers"},
		{append(base, "--app-id", "1", "--private-key", key, "--webhook-secret-file", secret, "--github-api-url", "ftp://x"), "github-api-url"},
		{append(base, "--app-id", "1", "--private-key", key, "--webhook-secret-file", secret, "--database-url", "mysql://u:pw-hunter2@h/db"), "database-url"},
		{append(base, "--app-id", "1", "--private-key", key, "--webhook-secret-file", secret, "--job-timeout", "forever"), "job-timeout"},
		{append(base, "--app-id", "1", "--private-key", key, "--webhook-secret-file", secret, "--sandbox-url", "nope"), "sandbox-url"},
		{append(base, "--forge", "gitlab", "--webhook-secret-file", secret), "forge \"gitlab\": want github or gitea"},
		{append(base, "--forge", "gitea", "--forge-token-file", secret, "--webhook-secret-file", secret), "forge-url"},
		{append(base, "--forge", "gitea", "--forge-url", "https://u:pw-hunter2@gitea.example/", "--forge-token-file", secret, "--webhook-secret-file", secret), "no credentials"},
		{append(base, "--forge", "gitea", "--forge-url", "https://gitea.example/", "--webhook-secret-file", secret), "forge-token-file"},
		{append(base, "--forge", "gitea", "--forge-url", "https://gitea.example/", "--forge-token-file", empty, "--webhook-secret-file", secret), "is empty"},
		{append(base, "--forge", "gitea", "--forge-url", "https://gitea.example/", "--forge-token-file", secret), "webhook-secret-file"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[6:], " "), func(t *testing.T) {
			code, stdout, stderr := run(t, c.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, stderr)
			}
			if stdout != "" || !strings.Contains(stderr, c.want) || !strings.HasPrefix(stderr, "aster: ") {
				t.Fatalf("stderr %q does not say %q (stdout %q)", stderr, c.want, stdout)
			}
			for _, s := range []string{"s3cret-value", "pw-hunter2", "not a key"} {
				if strings.Contains(stderr, s) {
					t.Fatalf("stderr echoes a secret: %q", stderr)
				}
			}
		})
	}
}

func TestAppHistory(t *testing.T) {
	db := filepath.Join(t.TempDir(), "aster.db")
	if code, _, stderr := run(t, "app", "history", "--db", db); code != ExitFailure || !strings.Contains(stderr, "no such file") {
		t.Fatalf("history of a missing database: %d %q", code, stderr)
	}
	st, err := store.Open(context.Background(), store.Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "app", "history", "--db", db); code != 0 || !strings.Contains(out, "no reviews recorded") {
		t.Fatalf("empty history: %d %q", code, out)
	}
	rec := &store.ReviewRecord{Pull: store.PullKey{Owner: "acme", Repo: "widgets", Number: 4}, HeadSHA: "0123456789abcdef",
		Outcome: store.OutcomePosted, Conclusion: "failure", Reported: 2, Findings: 3, InputTokens: 900, OutputTokens: 100, CostUSD: 0.02}
	if err := st.AddReview(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	// The server holds the database; history reads beside it.
	code, out, stderr := run(t, "app", "history", "--db", db, "--repo", "acme/widgets")
	if code != 0 || !strings.Contains(out, "acme/widgets#4") || !strings.Contains(out, "0123456") || !strings.Contains(out, "$0.0200") {
		t.Fatalf("history: %d %q %q", code, out, stderr)
	}
	code, out, _ = run(t, "app", "history", "--db", db, "--json", "--outcome", "posted")
	if code != 0 || !bytes.Contains([]byte(out), []byte(`"repository":"acme/widgets"`)) {
		t.Fatalf("history --json: %d %q", code, out)
	}
	if code, _, stderr := run(t, "app", "history", "--db", db, "--outcome", "great"); code != ExitUsage || !strings.Contains(stderr, "outcome") {
		t.Fatalf("bad --outcome: %d %q", code, stderr)
	}
	// A second server on the same SQLite file is refused.
	key := filepath.Join(t.TempDir(), "k.pem")
	_ = os.WriteFile(key, testRSAKey(t), 0o600)
	secret := filepath.Join(t.TempDir(), "s")
	_ = os.WriteFile(secret, []byte("x\n"), 0o600)
	code, _, stderr = run(t, "app", "serve", "--addr", "127.0.0.1:0", "--db", db, "--app-id", "1", "--private-key", key,
		"--webhook-secret-file", secret, "--docker-host", "unix:///nonexistent.sock")
	if code != ExitUsage || !strings.Contains(stderr, "in use by another aster app serve") {
		t.Fatalf("second server on one SQLite file: %d %q", code, stderr)
	}
	st.Close()
}

func testRSAKey(t *testing.T) []byte {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// aster app serve checks the App against the API before it takes a webhook: a key that is
// not the App's is a configuration error (exit 2) naming what to check, and an API that does
// not answer is a failure (exit 1); neither starts serving, and no secret is echoed.
func TestAppServeChecksTheAppAtStart(t *testing.T) {
	fake := githubtest.New(t, githubtest.Options{OnReject: func(string, ...any) {}})
	dir := t.TempDir()
	right, wrong, secret := filepath.Join(dir, "right.pem"), filepath.Join(dir, "wrong.pem"), filepath.Join(dir, "s")
	_ = os.WriteFile(right, fake.PrivateKeyPEM(), 0o600)
	_ = os.WriteFile(wrong, testRSAKey(t), 0o600)
	_ = os.WriteFile(secret, []byte("s3cret-value\n"), 0o600)
	serve := func(key, apiURL string) (int, string) {
		code, _, stderr := run(t, "app", "serve", "--addr", testkit.FreeAddr(t), "--db", filepath.Join(t.TempDir(), "a.db"),
			"--app-id", strconv.FormatInt(fake.AppID(), 10), "--private-key", key, "--webhook-secret-file", secret,
			"--github-api-url", apiURL, "--sandbox-url", "http://127.0.0.1:1")
		if strings.Contains(stderr, "s3cret-value") || strings.Contains(stderr, "PRIVATE KEY") {
			t.Errorf("a secret in the output: %s", stderr)
		}
		t.Logf("exit %d: %s", code, stderr)
		return code, stderr
	}
	if code, stderr := serve(wrong, fake.URL()); code != ExitUsage || !strings.Contains(stderr, "refused App") ||
		!strings.Contains(stderr, "--private-key") || !strings.Contains(stderr, wrong) {
		t.Errorf("a key that is not the App's: exit %d: %s", code, stderr)
	}
	closed := testkit.FreeAddr(t) // nothing listens there
	if code, stderr := serve(right, "http://"+closed+"/api/v3/"); code != ExitFailure || !strings.Contains(stderr, "cannot reach the GitHub API") ||
		!strings.Contains(stderr, "--github-api-url") {
		t.Errorf("an API that does not answer: exit %d: %s", code, stderr)
	}
}

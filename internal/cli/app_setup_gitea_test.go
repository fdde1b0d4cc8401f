package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// aster app setup --forge gitea without an admin token writes a webhook secret (0600,
// kept on a second run) and prints the webhook and the bot's access, never the secret.
func TestAppSetupGiteaPrints(t *testing.T) {
	dir := t.TempDir()
	args := []string{"app", "setup", "--forge", "gitea", "--url", "https://aster.example.com", "--forge-url", "https://gitea.example.com/", "--dir", dir}
	code, out, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	path := filepath.Join(dir, giteaSetupFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v, mode %v", err, fi)
	}
	secret, _ := os.ReadFile(path)
	if len(strings.TrimSpace(string(secret))) != 64 {
		t.Fatalf("secret %d bytes", len(secret))
	}
	for _, want := range []string{"https://aster.example.com/webhook", path, "Pull Request Synchronized", "write:repository",
		"aster app serve --forge gitea --forge-url https://gitea.example.com/"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+stderr, strings.TrimSpace(string(secret))) {
		t.Error("the secret was printed")
	}
	if code, out, _ := run(t, args...); code != 0 || !strings.Contains(out, "already in") {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	if again, _ := os.ReadFile(path); string(again) != string(secret) {
		t.Error("the second run replaced the secret without --force")
	}
	if code, _, stderr := run(t, append(args, "--admin-token-file", path)...); code != ExitUsage || !strings.Contains(stderr, "--repo") {
		t.Errorf("admin token without --repo: exit %d, %q", code, stderr)
	}
}

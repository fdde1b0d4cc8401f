package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReviewNothingToReview: `aster review --base HEAD` on a repository with no change
// says "nothing to review" and exits 0 — without a sandbox engine (none is configured here),
// in Markdown and in JSON — and names the uncommitted file.
func TestReviewNothingToReview(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.sh"), []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	if err := os.WriteFile(filepath.Join(dir, "a.sh"), []byte("echo $1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "review", "--base", "HEAD", dir)
	if code != 0 || !strings.Contains(out, "**Nothing to review**") || !strings.Contains(out, `"a.sh"`) ||
		!strings.Contains(errOut, "aster: nothing to review: HEAD changes no file") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "review", "--base", "HEAD", "--format", "json", dir)
	if code != 0 || !strings.Contains(out, `"nothing to review: HEAD`) {
		t.Errorf("json: exit %d\n%s", code, out)
	}
}

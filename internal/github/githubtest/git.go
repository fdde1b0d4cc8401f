package githubtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Deleted, as a file's content in GitRepo.Commit, removes the file.
const Deleted = "\x00deleted\x00"

// GitRepo is a real git repository in a test's temporary directory, used as the content of a
// repository on the fake: its commits are what tarballs, diffs and contents serve.
type GitRepo struct {
	Dir string
	t   TB
}

// NewGitRepo creates an empty repository with branch main. Commits are deterministic (fixed
// author, committer and dates), so the same files give the same SHAs in every run.
func NewGitRepo(t TB) *GitRepo {
	t.Helper()
	g := &GitRepo{Dir: t.TempDir(), t: t}
	g.git("init", "-q", "-b", "main")
	// No background gc or maintenance after a commit: it would still be
	// writing into the repository when t.TempDir removes it.
	g.git("config", "gc.auto", "0")
	g.git("config", "maintenance.auto", "false")
	return g
}

// Commit checks out parent ("" for the current HEAD), applies files (path → content, or Deleted)
// and commits; it returns the new commit's SHA.
func (g *GitRepo) Commit(parent, message string, files map[string]string) string {
	g.t.Helper()
	if parent != "" {
		g.git("checkout", "-q", "--detach", parent)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(g.Dir, filepath.FromSlash(p))
		if files[p] == Deleted {
			if err := os.Remove(full); err != nil {
				g.t.Fatalf("githubtest: delete %s: %v", p, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			g.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			g.t.Fatal(err)
		}
	}
	g.git("add", "-A")
	g.git("commit", "-q", "--allow-empty", "-m", message)
	return strings.TrimSpace(g.git("rev-parse", "HEAD"))
}

// Branch points branch name at sha.
func (g *GitRepo) Branch(name, sha string) {
	g.t.Helper()
	g.git("branch", "-f", name, sha)
}

func (g *GitRepo) git(args ...string) string {
	g.t.Helper()
	out, err := runGit(context.Background(), g.Dir, nil, args...)
	if err != nil {
		g.t.Fatalf("githubtest: %v", err)
	}
	return string(out)
}

// gitEnv makes git ignore the machine's configuration and stamps fixed identities and dates.
var gitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_AUTHOR_NAME=Aster Test", "GIT_AUTHOR_EMAIL=test@aster.invalid",
	"GIT_COMMITTER_NAME=Aster Test", "GIT_COMMITTER_EMAIL=test@aster.invalid",
	"GIT_AUTHOR_DATE=2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2025-01-01T00:00:00Z",
}

// runGit runs git in dir; with w set, stdout streams there instead of being returned.
func runGit(ctx context.Context, dir string, w io.Writer, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	if w != nil {
		cmd.Stdout = w
	}
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

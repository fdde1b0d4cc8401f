package giteatest

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Repo is a repository on the test Gitea, owned by the admin, with a local work tree
// the test commits in and pushes from over git HTTP.
type Repo struct {
	s           *Server
	Owner, Name string
	work        string
}

// CreateRepo creates owner Admin's repository name (empty, default branch main).
func (s *Server) CreateRepo(t testing.TB, name string) *Repo {
	t.Helper()
	s.MustAPI(t, s.Admin.Token, "POST", "user/repos", map[string]any{"name": name, "default_branch": "main", "private": true}, nil)
	r := &Repo{s: s, Owner: s.Admin.Login, Name: name, work: t.TempDir()}
	r.git(t, "init", "-q", "-b", "main")
	return r
}

// FullName is "owner/name".
func (r *Repo) FullName() string { return r.Owner + "/" + r.Name }

// Path is the API path of the repository followed by rest ("repos/owner/name/rest").
func (r *Repo) Path(rest string) string {
	return "repos/" + r.Owner + "/" + r.Name + "/" + strings.TrimPrefix(rest, "/")
}

// AddCollaborator gives login permission (read, write, admin) on the repository.
func (r *Repo) AddCollaborator(t testing.TB, login, permission string) {
	t.Helper()
	r.s.MustAPI(t, r.s.Admin.Token, "PUT", r.Path("collaborators/"+login), map[string]any{"permission": permission}, nil)
}

// Hook is a repository webhook.
type Hook struct {
	ID     int64 `json:"id"`
	Active bool  `json:"active"`
}

// CreateHook adds a Gitea webhook to url, signed with secret, for pull-request and
// issue-comment events.
func (r *Repo) CreateHook(t testing.TB, url, secret string) Hook {
	t.Helper()
	var h Hook
	r.s.MustAPI(t, r.s.Admin.Token, "POST", r.Path("hooks"), map[string]any{
		"type": "gitea", "active": true, "branch_filter": "*",
		"config": map[string]string{"url": url, "content_type": "json", "secret": secret},
		"events": []string{"pull_request", "pull_request_sync", "issue_comment", "pull_request_comment"},
	}, &h)
	return h
}

// Commit writes files (a nil content deletes) on branch (created from the current one
// when new) and commits them; it returns the commit id.
func (r *Repo) Commit(t testing.TB, branch string, files map[string]*string, msg string) string {
	t.Helper()
	if cur := strings.TrimSpace(r.git(t, "branch", "--show-current")); cur != branch {
		if strings.TrimSpace(r.git(t, "branch", "--list", branch)) == "" {
			r.git(t, "checkout", "-q", "-b", branch)
		} else {
			r.git(t, "checkout", "-q", branch)
		}
	}
	for name, content := range files {
		p := filepath.Join(r.work, filepath.FromSlash(name))
		if content == nil {
			r.git(t, "rm", "-q", name)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(*content), 0o644); err != nil {
			t.Fatal(err)
		}
		r.git(t, "add", name)
	}
	r.git(t, "commit", "-q", "--allow-empty", "-m", msg)
	return strings.TrimSpace(r.git(t, "rev-parse", "HEAD"))
}

// Push pushes branch to Gitea over HTTP as the admin (forced: a test may rewrite it).
func (r *Repo) Push(t testing.TB, branch string) {
	t.Helper()
	r.git(t, "push", "-q", "-f", r.s.URL+r.FullName()+".git", branch+":"+branch)
	r.waitPushed(t, branch, strings.TrimSpace(r.git(t, "rev-parse", branch)))
}

// waitPushed waits until Gitea's API shows branch at sha in a repository no longer
// empty: Gitea finishes a push (the branch table, the repository's empty flag that
// opening a pull request checks) in a queue after git has answered.
func (r *Repo) waitPushed(t testing.TB, branch, sha string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var repo struct {
			Empty bool `json:"empty"`
		}
		var br struct {
			Commit struct {
				ID string `json:"id"`
			} `json:"commit"`
		}
		_, rerr := r.s.API(r.s.Admin.Token, "GET", "repos/"+r.Owner+"/"+r.Name, nil, &repo)
		_, berr := r.s.API(r.s.Admin.Token, "GET", r.Path("branches/"+branch), nil, &br)
		if rerr == nil && berr == nil && !repo.Empty && br.Commit.ID == sha {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Gitea does not show %s at %s 30 s after the push (empty %v; %v; %v)", branch, sha, repo.Empty, rerr, berr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Checkout switches the work tree to branch.
func (r *Repo) Checkout(t testing.TB, branch string) { r.git(t, "checkout", "-q", branch) }

// git runs git in the work tree with the admin's token in an extra header (from the
// environment, not the command line) and automatic gc off.
func (r *Repo) git(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = r.work
	basic := base64.StdEncoding.EncodeToString([]byte(r.s.Admin.Login + ":" + r.s.Admin.Token))
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "HOME="+r.work,
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.invalid", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.invalid",
		"GIT_CONFIG_COUNT=3",
		"GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=http.extraHeader", "GIT_CONFIG_VALUE_1=Authorization: Basic "+basic,
		"GIT_CONFIG_KEY_2=init.defaultBranch", "GIT_CONFIG_VALUE_2=main")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// PullRequest is what a test reads of a pull request.
type PullRequest struct {
	Number int `json:"number"`
	Head   struct {
		SHA string `json:"sha"`
	} `json:"head"`
}

// OpenPR opens a pull request from head into base as the admin.
func (r *Repo) OpenPR(t testing.TB, head, base, title string) PullRequest {
	t.Helper()
	var pr PullRequest
	r.s.MustAPI(t, r.s.Admin.Token, "POST", r.Path("pulls"), map[string]any{"head": head, "base": base, "title": title, "body": "Please review."}, &pr)
	return pr
}

// Comment posts a conversation comment on issue or pull request number as the owner of
// token and returns its id.
func (r *Repo) Comment(t testing.TB, token string, number int, body string) int64 {
	t.Helper()
	var c struct {
		ID int64 `json:"id"`
	}
	r.s.MustAPI(t, token, "POST", r.Path(fmt.Sprintf("issues/%d/comments", number)), map[string]any{"body": body}, &c)
	return c.ID
}

// Ptr returns a pointer to s (file contents for Commit).
func Ptr(s string) *string { return &s }

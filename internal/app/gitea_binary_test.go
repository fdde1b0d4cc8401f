package app

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/gitea"
	"github.com/asterhq/aster/internal/gitea/giteatest"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testkit"
)

// testGiteaBinary does what docs/gitea.md tells an operator to do, with the real binary:
// `aster app setup --forge gitea` with an admin token creates the webhook and gives the bot
// its access, `aster app serve --forge gitea` runs the built-in gate in real sandboxes, and
// a pull request opened on Gitea gets the commit status, a review with the command
// injection on its line, and a summary; the bot's token is in none of the binary's output.
func testGiteaBinary(t *testing.T, gs *giteatest.Server) {
	if testing.Short() {
		t.Skip("needs a Docker engine and builds the binary")
	}
	sandboxtest.Docker(t)
	initBin := sandboxtest.InitBinary(t)
	bin := asterBinary(t)
	repo := gs.CreateRepo(t, "service")
	dir := t.TempDir()
	adminFile, botFile := filepath.Join(dir, "admin-token"), filepath.Join(dir, "bot-token")
	for f, tok := range map[string]string{adminFile: gs.Admin.Token, botFile: gs.Bot.Token} {
		if err := os.WriteFile(f, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := testkit.FreeAddr(t)
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "ASTER_LABELS=aster.test=" + sandboxtest.Label(t)}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	setup := exec.Command(bin, "app", "setup", "--forge", "gitea", "--url", "http://"+addr, "--forge-url", gs.URL,
		"--repo", repo.FullName(), "--bot", gs.Bot.Login, "--admin-token-file", adminFile, "--dir", dir)
	setup.Env = env
	out, err := setup.CombinedOutput()
	if err != nil {
		t.Fatalf("aster app setup --forge gitea: %v\n%s", err, out)
	}
	var hooks []giteatest.Hook
	gs.MustAPI(t, gs.Admin.Token, "GET", repo.Path("hooks"), nil, &hooks)
	if len(hooks) != 1 || !hooks[0].Active {
		t.Fatalf("hooks after setup: %+v\n%s", hooks, out)
	}

	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("aster app serve:\n%s", logs.String())
		}
	})
	startServer(t, []string{"app", "serve", "--forge", "gitea", "--forge-url", gs.URL, "--forge-token-file", botFile,
		"--webhook-secret-file", filepath.Join(dir, "gitea-webhook-secret"), "--addr", addr, "--init-path", initBin,
		"--db", filepath.Join(dir, "aster.db"), "--workers", "1", "--log-level", "debug"}, env, logs, "http://"+addr)

	repo.Commit(t, "main", map[string]*string{"README.md": giteatest.Ptr("# service\n")}, "base")
	repo.Push(t, "main")
	head := repo.Commit(t, "ping", map[string]*string{"app.py": giteatest.Ptr(`from flask import Flask, request
import os

app = Flask(__name__)


@app.route("/ping")
def ping():
    host = request.args["host"]
    os.system("ping -c 1 " + host)
    return "ok"
`)}, "ping a host")
	repo.Push(t, "ping")
	pr := repo.OpenPR(t, "ping", "main", "Ping a host")

	var final giteaStatus
	testkit.WaitFor(t, "the aster commit status to end", 4*time.Minute, func() bool {
		var ss []giteaStatus
		gs.MustAPI(t, gs.Admin.Token, "GET", repo.Path("statuses/"+head), nil, &ss)
		for _, s := range ss {
			if s.Context == gitea.StatusContext && s.Status != "pending" {
				final = s
				return true
			}
		}
		return false
	})
	if final.Status != "failure" || final.Creator.Login != gs.Bot.Login {
		t.Errorf("final status %+v, want failure by %s (a command injection)", final, gs.Bot.Login)
	}
	var rs []giteaReview
	gs.MustAPI(t, gs.Admin.Token, "GET", repo.Path(fmt.Sprintf("pulls/%d/reviews", pr.Number)), nil, &rs)
	if len(rs) != 1 || rs[0].State != "COMMENT" || rs[0].User.Login != gs.Bot.Login {
		t.Fatalf("reviews %+v, want one COMMENT review by the bot", rs)
	}
	var cs []giteaComment
	gs.MustAPI(t, gs.Admin.Token, "GET", repo.Path(fmt.Sprintf("pulls/%d/reviews/%d/comments", pr.Number, rs[0].ID)), nil, &cs)
	onLine := false
	for _, c := range cs {
		onLine = onLine || c.Path == "app.py" && c.Position == 10 && strings.Contains(c.Body, "command-injection") &&
			strings.Contains(c.Body, "`request.args['host']` (line 9)")
	}
	if !onLine {
		t.Errorf("no inline comment on app.py:10 with the command injection's flow among %+v", cs)
	}
	var ics []giteaComment
	gs.MustAPI(t, gs.Admin.Token, "GET", repo.Path(fmt.Sprintf("issues/%d/comments", pr.Number)), nil, &ics)
	if n := countFunc(ics, func(c giteaComment) bool { return publish.IsSummary(c.Body) && c.User.Login == gs.Bot.Login }); n != 1 {
		t.Errorf("%d summaries by the bot, want 1", n)
	}
	if strings.Contains(logs.String()+string(out), gs.Bot.Token) || strings.Contains(string(out), gs.Admin.Token) {
		t.Error("a token is in the binary's output")
	}
}

func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, v := range s {
		if f(v) {
			n++
		}
	}
	return n
}

package app

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/gitea"
	"github.com/asterhq/aster/internal/gitea/giteatest"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/testkit"
)

// giteaApp is Aster serving a real Gitea: the store on SQLite, the HTTP endpoint on
// loopback, the worker posting as the bot account, and a recording proxy in front of the
// webhook endpoint, so a test can replay what Gitea delivered.
type giteaApp struct {
	t      *testing.T
	gs     *giteatest.Server
	store  *store.Store
	url    string // Aster's own endpoint
	hook   string // the proxy Gitea delivers to
	secret string
	logs   *syncBuffer
	rev    *scripted

	mu         sync.Mutex
	deliveries []recorded
}

// recorded is one delivery as Gitea sent it and what Aster answered.
type recorded struct {
	header http.Header
	body   []byte
	status int
}

func newGiteaApp(t *testing.T, gs *giteatest.Server) *giteaApp {
	t.Helper()
	a := &giteaApp{t: t, gs: gs, secret: "gitea-webhook-secret-" + t.Name(), logs: &syncBuffer{}, rev: &scripted{}}
	st, err := store.Open(t.Context(), store.Options{Path: filepath.Join(t.TempDir(), "aster.db"),
		Queue: store.QueueOptions{PollInterval: 50 * time.Millisecond, RetryBase: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond,
			BusySnooze: 200 * time.Millisecond, Workers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	a.store = st
	log := slog.New(slog.NewTextHandler(a.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	forge, err := gitea.New(gitea.Options{URL: gs.URL, Token: []byte(gs.Bot.Token), Logger: log,
		RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	srv := testkit.Serve(t, func(ctx context.Context, ln net.Listener) error {
		return Serve(ctx, ServeOptions{Listener: ln, WebhookSecret: []byte(a.secret), Store: st, GitHub: GiteaForge{Forge: forge},
			Webhook: gitea.WebhookProtocol(), Reviewer: fingerprinted{a.rev}, TempDir: tmp, Secrets: [][]byte{[]byte(gs.Bot.Token)},
			ShutdownGrace: 5 * time.Second, Logger: log})
	})
	a.url = srv.URL
	proxy := httptest.NewServer(http.HandlerFunc(a.forward))
	a.hook = proxy.URL + "/webhook"
	t.Cleanup(func() {
		proxy.Close()
		srv.Stop(30 * time.Second)
		st.Close()
		if t.Failed() {
			t.Logf("app log:\n%s", a.logs.String())
		}
	})
	return a
}

// fingerprinted is the scripted reviewer with what the real pipeline adds and the
// lifecycle needs: the head, each finding's fingerprint (from its line's text) and the
// analyzer's run, so a finding that disappears is resolved.
type fingerprinted struct{ *scripted }

func (f fingerprinted) Review(ctx context.Context, in ReviewInput) (*review.Report, error) {
	rep, err := f.scripted.Review(ctx, in)
	if err != nil {
		return nil, err
	}
	files, err := diff.Parse(bytes.NewReader(in.Diff), diff.Options{})
	if err != nil {
		return nil, err
	}
	text := map[string]string{}
	for _, fl := range files {
		for _, hk := range fl.Hunks {
			for _, l := range hk.Lines {
				if l.Kind == diff.Added {
					text[fmt.Sprintf("%s:%d", fl.Path(), l.NewLine)] = l.Content
				}
			}
		}
	}
	plain := make([]finding.Finding, len(rep.Findings))
	for i, m := range rep.Findings {
		plain[i] = m.Finding
	}
	finding.AssignFingerprints(plain, func(path string, line int) (string, bool) {
		s, ok := text[fmt.Sprintf("%s:%d", path, line)]
		return s, ok
	})
	for i := range rep.Findings {
		rep.Findings[i].Fingerprint = plain[i].Fingerprint
	}
	rep.Head = in.Head
	rep.Analyzers = []gate.AnalyzerResult{{Name: "lines", Status: gate.StatusOK, Findings: len(rep.Findings)}}
	return rep, nil
}

// forward passes a delivery to Aster and records it.
func (a *giteaApp) forward(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	status := a.send(r.Header, body)
	a.mu.Lock()
	a.deliveries = append(a.deliveries, recorded{header: r.Header.Clone(), body: body, status: status})
	a.mu.Unlock()
	w.WriteHeader(status)
}

// send posts body with header to Aster's webhook endpoint and returns the status.
func (a *giteaApp) send(header http.Header, body []byte) int {
	req, err := http.NewRequest(http.MethodPost, a.url+"/webhook", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	for k, vs := range header {
		if strings.HasPrefix(k, "X-") || k == "Content-Type" {
			req.Header[k] = vs
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Errorf("deliver to aster: %v", err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (a *giteaApp) recorded() []recorded {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.deliveries)
}

// waitDelivery waits for a delivery of event whose body contains needle.
func (a *giteaApp) waitDelivery(event, needle string) recorded {
	a.t.Helper()
	var got recorded
	testkit.WaitFor(a.t, "a "+event+" delivery from Gitea", 30*time.Second, func() bool {
		for _, d := range a.recorded() {
			if d.header.Get(gitea.EventHeader) == event && bytes.Contains(d.body, []byte(needle)) {
				got = d
				return true
			}
		}
		return false
	})
	return got
}

func (a *giteaApp) history(repo *giteatest.Repo, number int) []store.ReviewRecord {
	a.t.Helper()
	recs, err := a.store.History(context.Background(), store.HistoryFilter{Repository: repo.FullName(), Number: number, Limit: 100})
	if err != nil {
		a.t.Fatal(err)
	}
	slices.Reverse(recs)
	return recs
}

// waitHistory waits until the pull request has n history records and returns them,
// oldest first.
func (a *giteaApp) waitHistory(repo *giteatest.Repo, number, n int) []store.ReviewRecord {
	a.t.Helper()
	testkit.WaitFor(a.t, fmt.Sprintf("%d review records of #%d", n, number), 60*time.Second, func() bool {
		return len(a.history(repo, number)) >= n
	})
	recs := a.history(repo, number)
	if len(recs) != n {
		a.t.Fatalf("%d review records of #%d, want %d: %+v", len(recs), number, n, recs)
	}
	return recs
}

// jobs counts the queue's review jobs, in any state.
func (a *giteaApp) jobs() int {
	a.t.Helper()
	js, err := a.store.Jobs(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	return len(js)
}

// What the test reads back from Gitea.
type giteaReview struct {
	ID    int64 `json:"id"`
	State string
	Body  string
	User  struct{ Login string }
}

type giteaComment struct {
	ID       int64 `json:"id"`
	Body     string
	Path     string
	Position int
	User     struct{ Login string }
	Resolver *struct{ Login string }
}

func (a *giteaApp) reviews(repo *giteatest.Repo, number int) []giteaReview {
	a.t.Helper()
	var rs []giteaReview
	a.gs.MustAPI(a.t, a.gs.Admin.Token, "GET", repo.Path(fmt.Sprintf("pulls/%d/reviews", number)), nil, &rs)
	return rs
}

func (a *giteaApp) reviewComments(repo *giteatest.Repo, number int) []giteaComment {
	a.t.Helper()
	var all []giteaComment
	for _, r := range a.reviews(repo, number) {
		var cs []giteaComment
		a.gs.MustAPI(a.t, a.gs.Admin.Token, "GET", repo.Path(fmt.Sprintf("pulls/%d/reviews/%d/comments", number, r.ID)), nil, &cs)
		all = append(all, cs...)
	}
	return all
}

func (a *giteaApp) issueComments(repo *giteatest.Repo, number int) []giteaComment {
	a.t.Helper()
	var cs []giteaComment
	a.gs.MustAPI(a.t, a.gs.Admin.Token, "GET", repo.Path(fmt.Sprintf("issues/%d/comments", number)), nil, &cs)
	return cs
}

type giteaStatus struct {
	ID          int64 `json:"id"`
	Status      string
	Context     string
	Description string
	Creator     struct{ Login string }
}

func (a *giteaApp) statuses(repo *giteatest.Repo, sha string) []giteaStatus {
	a.t.Helper()
	var ss []giteaStatus
	a.gs.MustAPI(a.t, a.gs.Admin.Token, "GET", repo.Path("statuses/"+sha), nil, &ss)
	// Newest first by id: Gitea's default order is by update time, in whole
	// seconds, so two statuses of one second come in either order.
	slices.SortFunc(ss, func(x, y giteaStatus) int { return cmp.Compare(y.ID, x.ID) })
	return ss
}

// posted is every text the bot put on pull request number.
func (a *giteaApp) posted(repo *giteatest.Repo, number int) string {
	var b strings.Builder
	for _, r := range a.reviews(repo, number) {
		b.WriteString(r.Body + "\n")
	}
	for _, c := range a.reviewComments(repo, number) {
		b.WriteString(c.Body + "\n")
	}
	for _, c := range a.issueComments(repo, number) {
		b.WriteString(c.Body + "\n")
	}
	return b.String()
}

// TestGitea runs Aster against a real Gitea (giteatest): one server for every subtest,
// a repository each.
func TestGitea(t *testing.T) {
	gs := giteatest.Start(t)
	t.Run("lifecycle", func(t *testing.T) { t.Parallel(); testGiteaLifecycle(t, gs) })
	t.Run("refused", func(t *testing.T) { t.Parallel(); testGiteaRefused(t, gs) })
	t.Run("binary", func(t *testing.T) { t.Parallel(); testGiteaBinary(t, gs) })
}

// testGiteaLifecycle: a pull request opened on Gitea gets one COMMENT review with inline
// comments on the right new-side lines, Aster's commit status and a summary; a second
// push is reviewed incrementally, the summary edited in place and the fixed finding's
// conversation resolved with a reply; a redelivered webhook posts nothing twice; the
// bot's token is in no log and no post.
func testGiteaLifecycle(t *testing.T, gs *giteatest.Server) {
	a := newGiteaApp(t, gs)
	repo := gs.CreateRepo(t, "widgets")
	// What `aster app setup --forge gitea` does with an admin token: the bot's access and
	// the webhook, twice (the second run changes nothing but the secret it sets).
	admin, err := gitea.New(gitea.Options{URL: gs.URL, Token: []byte(gs.Admin.Token)})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := admin.Repo(repo.Owner, repo.Name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := ac.AddCollaborator(t.Context(), gs.Bot.Login, "admin"); err != nil {
			t.Fatal(err)
		}
		if _, created, err := ac.EnsureWebhook(t.Context(), a.hook, []byte(a.secret)); err != nil || created != (i == 0) {
			t.Fatalf("webhook, run %d: created %v, %v", i+1, created, err)
		}
	}
	var hooks []giteatest.Hook
	gs.MustAPI(t, gs.Admin.Token, "GET", repo.Path("hooks"), nil, &hooks)
	if len(hooks) != 1 || !hooks[0].Active {
		t.Fatalf("hooks %+v, want one active", hooks)
	}
	base := repo.Commit(t, "main", map[string]*string{"app.py": giteatest.Ptr("import os\n\nprint('hi')\n")}, "base")
	repo.Push(t, "main")
	head1 := repo.Commit(t, "feature", map[string]*string{
		"app.py": giteatest.Ptr("import os\n\nprint('hi')\nx = 1  # TODO tidy\ny = 2  # FIXME broken\nz = 3  # BUG here\n"),
	}, "add things")
	repo.Push(t, "feature")
	pr := repo.OpenPR(t, "feature", "main", "Add things")
	if pr.Head.SHA != head1 {
		t.Fatalf("pull request head %s, pushed %s", pr.Head.SHA, head1)
	}

	recs := a.waitHistory(repo, pr.Number, 1)
	if recs[0].Outcome != store.OutcomePosted || recs[0].HeadSHA != head1 || recs[0].BaseSHA != base {
		t.Fatalf("first review: %+v", recs[0])
	}
	if calls := a.rev.calls(); len(calls) != 1 || !bytes.Contains(calls[0].Diff, []byte("+y = 2  # FIXME broken")) {
		t.Fatalf("reviewer calls %d; want one with the pull request's diff", len(calls))
	}
	a.rev.mu.Lock()
	files := slices.Clone(a.rev.files[0])
	a.rev.mu.Unlock()
	if !slices.Contains(files, "app.py") {
		t.Errorf("head snapshot from Gitea's archive holds %v, want app.py at its root", files)
	}

	rs := a.reviews(repo, pr.Number)
	if len(rs) != 1 || rs[0].State != "COMMENT" || rs[0].User.Login != gs.Bot.Login {
		t.Fatalf("reviews %+v, want one COMMENT review by %s", rs, gs.Bot.Login)
	}
	lines := map[int]string{}
	for _, c := range a.reviewComments(repo, pr.Number) {
		if c.Path != "app.py" || c.User.Login != gs.Bot.Login || len(publish.Markers(c.Body)) != 1 {
			t.Errorf("inline comment %+v", c)
		}
		lines[c.Position] = c.Body
	}
	if len(lines) != 3 || !strings.Contains(lines[4], "TODO left in") || !strings.Contains(lines[5], "FIXME left in") ||
		!strings.Contains(lines[6], "This line looks wrong") {
		t.Fatalf("inline comments by line: %v; want the TODO on 4, the FIXME on 5, the model's on 6", lines)
	}
	st := a.statuses(repo, head1)
	if len(st) == 0 || st[0].Context != gitea.StatusContext || st[0].Status != "failure" || st[0].Creator.Login != gs.Bot.Login {
		t.Fatalf("commit statuses on the head: %+v; want aster failure (a FIXME) by the bot, newest first", st)
	}
	summaries := func() []giteaComment {
		var out []giteaComment
		for _, c := range a.issueComments(repo, pr.Number) {
			if publish.IsSummary(c.Body) {
				out = append(out, c)
			}
		}
		return out
	}
	sum1 := summaries()
	if len(sum1) != 1 || sum1[0].User.Login != gs.Bot.Login || !strings.Contains(sum1[0].Body, head1[:7]) {
		t.Fatalf("summaries %+v, want one by the bot naming %s", sum1, head1[:7])
	}

	// A redelivery of the same delivery is a duplicate; the same body under a new
	// delivery id is accepted and finds the head reviewed: no job, nothing posted twice.
	opened := a.waitDelivery("pull_request", `"action": "opened"`)
	if opened.status != http.StatusAccepted {
		t.Fatalf("Gitea's delivery answered %d, want 202", opened.status)
	}
	jobs := a.jobs()
	if got := a.send(opened.header, opened.body); got != http.StatusOK {
		t.Errorf("redelivery answered %d, want 200 (duplicate)", got)
	}
	again := opened.header.Clone()
	again.Set(gitea.DeliveryHeader, "0b7d0d7e-0000-4000-8000-000000000001")
	if got := a.send(again, opened.body); got/100 != 2 {
		t.Errorf("replay under a new delivery id answered %d, want 2xx", got)
	}
	if n := a.jobs(); n != jobs {
		t.Errorf("the replays enqueued %d job(s) for a head already reviewed", n-jobs)
	}
	if n := len(a.reviews(repo, pr.Number)); n != 1 {
		t.Errorf("%d reviews after the replays, want 1", n)
	}

	// The second push fixes the FIXME and adds a TODO: only the new line is commented,
	// the summary is edited in place and the fixed finding's conversation resolved.
	head2 := repo.Commit(t, "feature", map[string]*string{
		"app.py": giteatest.Ptr("import os\n\nprint('hi')\nx = 1  # TODO tidy\ny = 2\nz = 3  # BUG here\nw = 4  # TODO later\n"),
	}, "fix the FIXME")
	repo.Push(t, "feature")
	recs = a.waitHistory(repo, pr.Number, 2)
	if recs[1].Outcome != store.OutcomePosted || recs[1].HeadSHA != head2 || recs[1].SinceSHA != head1 {
		t.Fatalf("second review: %+v, want posted, incremental since %s", recs[1], head1[:7])
	}
	if rs := a.reviews(repo, pr.Number); len(rs) != 2 {
		t.Fatalf("%d reviews, want 2", len(rs))
	}
	byLine := map[int][]giteaComment{}
	for _, c := range a.reviewComments(repo, pr.Number) {
		byLine[c.Position] = append(byLine[c.Position], c)
	}
	if len(byLine[7]) != 1 || !strings.Contains(byLine[7][0].Body, "TODO later") || len(byLine[4]) != 1 || len(byLine[6]) != 1 {
		t.Errorf("after the second push: %d comment(s) on line 7 (want the new TODO), %d on 4, %d on 6 (want 1 each: nothing repeated)",
			len(byLine[7]), len(byLine[4]), len(byLine[6]))
	}
	fixme := byLine[5]
	if len(fixme) != 2 || fixme[0].Resolver == nil || fixme[0].Resolver.Login != gs.Bot.Login ||
		!strings.HasPrefix(fixme[1].Body, "fixed in `"+head2[:7]+"`") || fixme[1].User.Login != gs.Bot.Login {
		t.Errorf("the FIXME's conversation: %+v; want it resolved by the bot after its reply", fixme)
	}
	sum2 := summaries()
	if len(sum2) != 1 || sum2[0].ID != sum1[0].ID || !strings.Contains(sum2[0].Body, head2[:7]) || sum2[0].Body == sum1[0].Body {
		t.Errorf("summaries after the second push: %+v; want the first one (id %d) edited to name %s", sum2, sum1[0].ID, head2[:7])
	}
	if st := a.statuses(repo, head2); len(st) == 0 || st[0].Status != "success" {
		t.Errorf("status on the second head: %+v, want success", st)
	}

	// The owner answers "/aster ignore" in the TODO's conversation: Gitea sends the reply as
	// the pull request's issue_comment, and Aster records the dismissal and answers in the
	// conversation at once, without a push.
	todo := byLine[4][0]
	var cmd giteaComment
	gs.MustAPI(t, gs.Admin.Token, "POST", repo.Path(fmt.Sprintf("pulls/%d/comments/%d/replies", pr.Number, todo.ID)),
		map[string]any{"body": "/aster ignore tidied in the next release"}, &cmd)
	if d := a.waitDelivery("issue_comment", "/aster ignore"); d.status != http.StatusAccepted {
		t.Fatalf("the reply's delivery answered %d, want 202", d.status)
	}
	recs = a.waitHistory(repo, pr.Number, 3)
	if recs[2].Outcome != store.OutcomeSkipped || recs[2].Reason != "answered the review threads" {
		t.Fatalf("the reply's job: %+v, want the conversations read and nothing reviewed", recs[2])
	}
	ds, err := a.store.Dismissals(t.Context(), repo.Owner, repo.Name)
	if err != nil || len(ds) != 1 || ds[0].By != gs.Admin.Login || ds[0].Reason != "tidied in the next release" ||
		ds[0].FindingID != publish.Markers(todo.Body)[0] {
		t.Fatalf("dismissals after /aster ignore: %+v, %v", ds, err)
	}
	var answers []giteaComment
	for _, c := range a.reviewComments(repo, pr.Number) {
		if c.Position == 4 && c.User.Login == gs.Bot.Login && c.ID != todo.ID {
			answers = append(answers, c)
		}
	}
	if len(answers) != 1 || !strings.Contains(answers[0].Body, "Dismissed by `"+gs.Admin.Login+"`") {
		t.Errorf("Aster's answers in the TODO's conversation: %+v, want one dismissal notice", answers)
	}

	// Nothing secret in the logs (Aster's, Gitea's), the posts or what the reviewer (the
	// pipeline: sandboxes, the prompt) was given.
	given := fmt.Sprintf("%+v", a.rev.calls())
	for name, text := range map[string]string{"aster log": a.logs.String(), "posts": a.posted(repo, pr.Number), "review input": given} {
		for _, secret := range []string{gs.Bot.Token, gs.Admin.Token, a.secret} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds a secret (%.8q…)", name, secret)
			}
		}
	}
	if strings.Contains(gs.Log(), gs.Bot.Token) {
		t.Error("Gitea's log holds the bot token")
	}
}

// testGiteaRefused: an outsider's /aster review is refused after the permission check
// through Gitea's API; an unsigned or mis-signed delivery is refused before parsing and
// enqueues nothing.
func testGiteaRefused(t *testing.T, gs *giteatest.Server) {
	a := newGiteaApp(t, gs)
	repo := gs.CreateRepo(t, "gadgets")
	repo.AddCollaborator(t, gs.Bot.Login, "admin")
	repo.AddCollaborator(t, gs.Outsider.Login, "read")
	repo.Commit(t, "main", map[string]*string{"a.txt": giteatest.Ptr("a\n")}, "base")
	repo.Push(t, "main")
	repo.Commit(t, "feature", map[string]*string{"a.txt": giteatest.Ptr("a\nb # TODO\n")}, "change")
	repo.Push(t, "feature")
	// The hook comes after the pull request: only the outsider's command reaches Aster.
	pr := repo.OpenPR(t, "feature", "main", "Change")
	repo.CreateHook(t, a.hook, a.secret)
	repo.Comment(t, gs.Outsider.Token, pr.Number, "/aster review")
	d := a.waitDelivery("issue_comment", "/aster review")
	if d.status != http.StatusAccepted {
		t.Fatalf("the command's delivery answered %d, want 202", d.status)
	}
	recs := a.waitHistory(repo, pr.Number, 1)
	if recs[0].Outcome != store.OutcomeSkipped || !strings.Contains(recs[0].Reason, "refused") || !strings.Contains(recs[0].Reason, gs.Outsider.Login) {
		t.Fatalf("outsider's command: %+v, want refused", recs[0])
	}
	if len(a.rev.calls()) != 0 || len(a.reviews(repo, pr.Number)) != 0 || len(a.statuses(repo, pr.Head.SHA)) != 0 {
		t.Error("an outsider's command started a review")
	}
	// The same command from the repository's owner reviews the head.
	repo.Comment(t, gs.Admin.Token, pr.Number, "/aster review")
	recs = a.waitHistory(repo, pr.Number, 2)
	if recs[1].Outcome != store.OutcomePosted || recs[1].Cause != "command" {
		t.Fatalf("owner's command: %+v, want a review posted", recs[1])
	}
	if rs := a.reviews(repo, pr.Number); len(rs) != 1 || rs[0].User.Login != gs.Bot.Login {
		t.Errorf("reviews after the owner's command: %+v", rs)
	}

	// Unsigned, mis-signed, and signed with GitHub's prefix: 401, nothing enqueued.
	before := a.jobs()
	bad := map[string]string{"": "", "wrong": gitea.Sign([]byte("not-the-secret"), d.body), "github form": "sha256=" + gitea.Sign([]byte(a.secret), d.body)}
	for name, sig := range bad {
		h := d.header.Clone()
		h.Del(gitea.SignatureHeader)
		h.Del("X-Hub-Signature-256")
		h.Del("X-Hub-Signature")
		h.Del("X-Gogs-Signature")
		h.Set(gitea.DeliveryHeader, "0b7d0d7e-0000-4000-8000-00000000000"+fmt.Sprint(len(name)%10))
		if sig != "" {
			h.Set(gitea.SignatureHeader, sig)
		}
		if got := a.send(h, d.body); got != http.StatusUnauthorized {
			t.Errorf("%s signature: %d, want 401", name, got)
		}
	}
	if after := a.jobs(); after != before {
		t.Errorf("refused deliveries enqueued %d job(s)", after-before)
	}
}

package app

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/testkit"
)

// harness is a running App against the fake GitHub: a real store, the real HTTP endpoint on
// a loopback port, real workers, and the Reviewer the test chooses.
type harness struct {
	t      *testing.T
	fake   *githubtest.Server
	git    *githubtest.GitRepo
	store  *store.Store
	url    string
	secret []byte
	logs   *syncBuffer
	server *testkit.Server
	owner  string
	repo   string
	// comments numbers the comments commentEvent makes: each is a new comment on GitHub.
	comments atomic.Int64
	// o and so are what the App was started with (sibling starts another alike).
	o        harnessOptions
	so       store.Options
	stopOnce sync.Once
}

type harnessOptions struct {
	reviewer Reviewer
	queue    store.QueueOptions
	dbURL    string // postgres; default a SQLite file in the test's directory
	drafts   bool
	// wrap, when set, stands between the worker and each repository's API on GitHub.
	wrap func(RepoAPI) RepoAPI
	// budget and bodyTimeout replace the webhook body defaults.
	budget      *github.BodyBudget
	bodyTimeout time.Duration
	metrics     *Metrics
}

// wrappedGitHub is GitHub with each repository's API passed through wrap.
type wrappedGitHub struct {
	GitHub
	wrap func(RepoAPI) RepoAPI
}

func (g wrappedGitHub) Repo(installationID int64, owner, repo string) (RepoAPI, error) {
	api, err := g.GitHub.Repo(installationID, owner, repo)
	if err != nil {
		return nil, err
	}
	return g.wrap(api), nil
}

// syncBuffer collects output from many goroutines while the test reads it.
type syncBuffer = testkit.SyncBuffer

const testSecret = "webhook-secret-for-tests-0123456789"

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	fake := githubtest.New(t, githubtest.Options{})
	git := githubtest.NewGitRepo(t)
	fake.AddRepo(githubtest.Repository{Owner: "acme", Name: "widgets", Git: git})
	h := &harness{t: t, fake: fake, git: git, secret: []byte(testSecret), logs: &syncBuffer{}, owner: "acme", repo: "widgets"}
	q := o.queue
	if q.PollInterval == 0 {
		q.PollInterval = 50 * time.Millisecond
	}
	if q.RetryBase == 0 {
		q.RetryBase, q.RetryMax = 50*time.Millisecond, 200*time.Millisecond
	}
	if q.BusySnooze == 0 {
		q.BusySnooze = 200 * time.Millisecond
	}
	if q.Workers == 0 {
		q.Workers = 2
	}
	so := store.Options{Path: filepath.Join(t.TempDir(), "aster.db"), Queue: q}
	if o.dbURL != "" {
		so = store.Options{URL: o.dbURL, Queue: q}
	}
	h.start(o, so)
	return h
}

// sibling starts another App on h's database and fake GitHub, with the same options: a
// restart of h when h was shut down and clientID is h's, another replica when h runs.
func (h *harness) sibling(clientID string) *harness {
	h.t.Helper()
	s := &harness{t: h.t, fake: h.fake, git: h.git, secret: h.secret, logs: &syncBuffer{}, owner: h.owner, repo: h.repo}
	so := h.so
	so.Queue.ClientID = clientID
	s.comments.Store(h.comments.Load() + 1000) // its commands are new comments too
	s.start(h.o, so)
	return s
}

// start opens the store and serves the App.
func (h *harness) start(o harnessOptions, so store.Options) {
	t, fake := h.t, h.fake
	h.o, h.so = o, so
	st, err := store.Open(t.Context(), so)
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	// Plain text logs, no redacting wrapper: the test proves nothing secret is logged in
	// the first place.
	log := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	app, err := github.NewApp(github.AppOptions{AppID: fake.AppID(), PrivateKey: fake.PrivateKeyPEM(), BaseURL: fake.URL(),
		Logger: log, Retry: github.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	var gh GitHub = AppGitHub{App: app}
	if o.wrap != nil {
		gh = wrappedGitHub{GitHub: gh, wrap: o.wrap}
	}
	tmp := t.TempDir() // may t.Fatal: on the test goroutine
	h.server = testkit.Serve(t, func(ctx context.Context, ln net.Listener) error {
		return Serve(ctx, ServeOptions{Listener: ln, WebhookSecret: h.secret, Store: st, GitHub: gh,
			Reviewer: o.reviewer, ReviewDrafts: o.drafts, TempDir: tmp, Secrets: [][]byte{fake.PrivateKeyPEM()},
			WebhookBudget: o.budget, WebhookBodyTimeout: o.bodyTimeout, ShutdownGrace: 5 * time.Second, Logger: log,
			Metrics: o.metrics})
	})
	h.url = h.server.URL
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("app log (%s):\n%s", cmp.Or(so.Queue.ClientID, "default client id"), h.logs.String())
		}
	})
}

// stop shuts the App down and closes its store, once: a restart (sibling) may follow.
func (h *harness) stop() {
	h.stopOnce.Do(func() {
		h.shutdown()
		h.store.Close()
	})
}

// shutdown stops the App before the store closes; testkit reports an error
// of its Serve.
func (h *harness) shutdown() { h.server.Stop(30 * time.Second) }

// deliver posts a signed delivery and returns the status.
func (h *harness) deliver(event, id string, body []byte) int {
	h.t.Helper()
	return h.deliverSigned(event, id, body, github.Sign(h.secret, body))
}

func (h *harness) deliverSigned(event, id string, body []byte, signature string) int {
	h.t.Helper()
	// Deliveries are also made from goroutines, where t.Fatal must not be
	// called: report and return a status no test expects.
	req, err := http.NewRequest(http.MethodPost, h.url+"/webhook", bytes.NewReader(body))
	if err != nil {
		h.t.Errorf("delivery %s: %v", id, err)
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(github.EventHeader, event)
	req.Header.Set(github.DeliveryHeader, id)
	if signature != "" {
		req.Header.Set(github.SignatureHeader, signature)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Errorf("delivery %s: %v", id, err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if d := time.Since(start); d > time.Second {
		h.t.Errorf("delivery %s answered in %s, want under a second", id, d)
	}
	return resp.StatusCode
}

// example returns GitHub's published example payload for event/action, decoded.
func example(t *testing.T, event, action string) map[string]any {
	t.Helper()
	for _, ex := range githubtest.WebhookExamples(t, event) {
		if ex.Action == action {
			var m map[string]any
			if err := json.Unmarshal(ex.Body, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no %s/%s example", event, action)
	return nil
}

func (h *harness) repoJSON(m map[string]any) {
	m["name"], m["full_name"] = h.repo, h.owner+"/"+h.repo
	m["id"] = float64(4242)
	m["owner"].(map[string]any)["login"] = h.owner
}

// prEvent is GitHub's example pull_request delivery for action, pointed at the harness's
// repository, pull request, head and base.
func (h *harness) prEvent(action string, number int, head, base, before string) []byte {
	h.t.Helper()
	m := h.prExample(action, number, head, base, h.fake.InstallationID())
	pr := m["pull_request"].(map[string]any)
	pr["head"].(map[string]any)["ref"], pr["base"].(map[string]any)["ref"] = "feature", "main"
	if before != "" {
		m["before"], m["after"] = before, head
	}
	return mustJSON(h.t, m)
}

// prExample is GitHub's example pull_request delivery for action, pointed at h's
// repository, pull request number, head and base, from installation.
func (h *harness) prExample(action string, number int, head, base string, installation int64) map[string]any {
	h.t.Helper()
	m := example(h.t, "pull_request", action)
	m["number"] = float64(number)
	h.repoJSON(m["repository"].(map[string]any))
	pr := m["pull_request"].(map[string]any)
	pr["number"], pr["draft"], pr["state"] = float64(number), false, "open"
	hd, bs := pr["head"].(map[string]any), pr["base"].(map[string]any)
	hd["sha"], bs["sha"] = head, base
	h.repoJSON(hd["repo"].(map[string]any))
	h.repoJSON(bs["repo"].(map[string]any))
	m["installation"] = map[string]any{"id": float64(installation)}
	return m
}

// mustJSON is v as JSON.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// commentEvent is GitHub's example issue_comment delivery of a new comment carrying body,
// by user.
func (h *harness) commentEvent(number int, user, body string) []byte {
	h.t.Helper()
	return h.commentEventAs("created", 9000+h.comments.Add(1), "", number, user, body)
}

// commentEventAs is GitHub's example issue_comment delivery for action (created, edited),
// on comment id, updated at updatedAt ("" keeps the example's time).
func (h *harness) commentEventAs(action string, id int64, updatedAt string, number int, user, body string) []byte {
	h.t.Helper()
	m := example(h.t, "issue_comment", action)
	h.repoJSON(m["repository"].(map[string]any))
	issue := m["issue"].(map[string]any)
	issue["number"] = float64(number)
	issue["pull_request"] = map[string]any{"url": "https://api.github.com/repos/acme/widgets/pulls/" + fmt.Sprint(number)}
	c := m["comment"].(map[string]any)
	c["id"] = float64(id)
	c["body"] = body
	if updatedAt != "" {
		c["updated_at"] = updatedAt
	}
	c["user"].(map[string]any)["login"] = user
	c["user"].(map[string]any)["type"] = "User"
	m["sender"].(map[string]any)["login"] = user
	m["sender"].(map[string]any)["type"] = "User"
	m["installation"] = map[string]any{"id": float64(h.fake.InstallationID())}
	return mustJSON(h.t, m)
}

// push points pull request number at head on the fake GitHub and delivers its
// pull_request event (action; before is the previous head, "" for none) under delivery,
// failing the test unless it is accepted.
func (h *harness) push(delivery, action string, number int, base, head, before string) {
	h.t.Helper()
	h.openPR(number, base, head)
	if got := h.deliver("pull_request", delivery, h.prEvent(action, number, head, base, before)); got != http.StatusAccepted {
		h.t.Fatalf("%s (delivery %s): %d, want 202", action, delivery, got)
	}
}

func (h *harness) openPR(number int, base, head string) {
	h.fake.AddPullRequest(h.owner, h.repo, githubtest.PullRequest{Number: number, Title: "Add things",
		Body: "Please review.", BaseRef: "main", BaseSHA: base, HeadRef: "feature", HeadSHA: head})
}

func (h *harness) history(number int) []store.ReviewRecord {
	h.t.Helper()
	recs, err := h.store.History(context.Background(), store.HistoryFilter{Repository: h.owner + "/" + h.repo, Number: number, Limit: 1000})
	if err != nil {
		h.t.Fatal(err)
	}
	return recs
}

// waitHistory waits until the pull request has n history records, and returns them
// (oldest first).
func (h *harness) waitHistory(number, n int, timeout time.Duration) []store.ReviewRecord {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		recs := h.history(number)
		if len(recs) >= n {
			if len(recs) > n {
				h.t.Fatalf("history of #%d has %d records, want %d: %+v", number, len(recs), n, recs)
			}
			out := make([]store.ReviewRecord, len(recs))
			for i := range recs {
				out[len(recs)-1-i] = recs[i]
			}
			return out
		}
		if time.Now().After(deadline) {
			jobs, _ := h.store.Jobs(context.Background())
			h.t.Fatalf("timed out after %s waiting for %d history records of #%d (have %d); jobs: %+v", timeout, n, number, len(recs), jobs)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// scripted is a Reviewer for tests: a line-oriented "model" and "gate" over the diff it is
// given. Added lines containing TODO get a warning finding, FIXME an error finding (which
// fails the check), BUG a model comment. It comments on every matching line of the whole
// pull request's diff, as a forgetful model would: the app must keep a push's review to
// its own lines and never repeat itself.
type scripted struct {
	mu      sync.Mutex
	entered int // calls begun (their input fetched), blocked or not
	inputs  []ReviewInput
	files   [][]string // snapshot file names per call
	block   chan struct{}
	err     error
}

func (s *scripted) Review(ctx context.Context, in ReviewInput) (*review.Report, error) {
	s.mu.Lock()
	block, err := s.block, s.err
	s.entered++
	s.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	names, err := snapshotNames(in.OpenSnapshot)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cp := in
	cp.OpenSnapshot = nil
	s.inputs = append(s.inputs, cp)
	s.files = append(s.files, names)
	s.mu.Unlock()
	files, err := diff.Parse(bytes.NewReader(in.Diff), diff.Options{})
	if err != nil {
		return nil, err
	}
	rep := review.NotReviewed("")
	rep.Conclusion, rep.FailOn, rep.FilterMode = review.Success, "error", gate.ModeAdded
	rep.Files.Changed, rep.Files.Reviewed = len(files), len(files)
	rep.Model = review.ModelReport{Status: review.ModelOK, Provider: "script", Model: "lines", Summary: "Looks mostly fine.",
		Usage: review.Usage{Calls: 1, InputTokens: 1000, OutputTokens: 100, CostUSD: 0.01}}
	rep.DurationsMS = map[string]int64{"gate": 1}
	mark := func(path string, line int, sev finding.Severity, rule, msg string) gate.Marked {
		return gate.Marked{Finding: finding.Finding{Path: path, StartLine: line, EndLine: line, Severity: sev, Analyzer: "lines",
			RuleID: rule, Message: msg}, Reported: true}
	}
	for _, f := range files {
		for _, hk := range f.Hunks {
			for _, l := range hk.Lines {
				if l.Kind != diff.Added {
					continue
				}
				switch {
				case strings.Contains(l.Content, "FIXME"):
					rep.Findings = append(rep.Findings, mark(f.Path(), l.NewLine, finding.Error, "fixme", "FIXME left in: "+strings.TrimSpace(l.Content)))
					rep.Conclusion = review.Failure
				case strings.Contains(l.Content, "TODO"):
					rep.Findings = append(rep.Findings, mark(f.Path(), l.NewLine, finding.Warning, "todo", "TODO left in: "+strings.TrimSpace(l.Content)))
				}
				if strings.Contains(l.Content, "BUG") {
					rep.Model.Comments = append(rep.Model.Comments, review.Comment{Path: f.Path(), Line: l.NewLine, Severity: finding.Warning,
						Body: "This line looks wrong: " + strings.TrimSpace(l.Content)})
				}
			}
		}
	}
	return rep, nil
}

// begun is how many calls have begun: their diff and snapshot were fetched.
func (s *scripted) begun() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entered
}

func (s *scripted) calls() []ReviewInput {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ReviewInput(nil), s.inputs...)
}

// snapshotNames reads the snapshot as the pipeline would and lists its entries.
func snapshotNames(open func() (io.ReadCloser, error)) ([]string, error) {
	if open == nil {
		return nil, errors.New("no snapshot")
	}
	rc, err := open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		names = append(names, hd.Name)
	}
}

// posted collects every text Aster put on the fake: reviews, comments, check runs.
func (h *harness) posted() string {
	var b strings.Builder
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9} {
		for _, r := range h.fake.Reviews(h.owner, h.repo, n) {
			b.WriteString(r.Body + "\n")
			for _, c := range r.Comments {
				b.WriteString(c.Body + "\n")
			}
		}
		for _, c := range h.fake.IssueComments(h.owner, h.repo, n) {
			b.WriteString(c.Body + "\n")
		}
	}
	for _, c := range h.fake.CheckRuns(h.owner, h.repo) {
		b.WriteString(c.Title + "\n" + c.Summary + "\n" + c.Text + "\n")
		for _, a := range c.Annotations {
			b.WriteString(a.Title + "\n" + a.Message + "\n")
		}
	}
	return b.String()
}

// secrets is fixed plus what the fake GitHub holds secret: the installation tokens it issued
// and the lines of the App's private key.
func (h *harness) secrets(fixed ...string) []string {
	out := slices.Clone(fixed)
	for _, tok := range h.fake.Tokens() {
		out = append(out, tok.Token)
	}
	for _, line := range strings.Split(string(h.fake.PrivateKeyPEM()), "\n") {
		if len(line) > 20 {
			out = append(out, line)
		}
	}
	return out
}

// assertNoSecrets greps the logs and everything posted for the App's key, the installation
// tokens the fake issued, the webhook secret and token shapes (SECURITY I1).
func (h *harness) assertNoSecrets(extra ...string) {
	h.t.Helper()
	texts := map[string]string{"log": h.logs.String(), "posted": h.posted()}
	needles := append(h.secrets("ghs_", "ghp_", "-----BEGIN", testSecret), extra...)
	for name, text := range texts {
		for _, n := range needles {
			if n != "" && strings.Contains(text, n) {
				h.t.Errorf("%s contains a secret (%.12q…)", name, n)
			}
		}
	}
	if len(h.fake.Tokens()) == 0 {
		h.t.Error("no installation token was issued: the check above proves nothing")
	}
}

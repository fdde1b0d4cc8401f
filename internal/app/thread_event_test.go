package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/store"
)

// threadResolvedEvent is GitHub's example pull_request_review_thread "resolved" delivery
// for thread th of pull request number, resolved by resolver (a bot when bot is set),
// checked against the schema of GitHub's description where Aster reads it.
func (h *harness) threadResolvedEvent(number int, th githubtest.Thread, resolver string, bot bool) []byte {
	h.t.Helper()
	m := example(h.t, "pull_request_review_thread", "resolved")
	h.repoJSON(m["repository"].(map[string]any))
	m["pull_request"].(map[string]any)["number"] = float64(number)
	m["installation"] = map[string]any{"id": float64(h.fake.InstallationID())}
	thread := m["thread"].(map[string]any)
	proto := thread["comments"].([]any)[0].(map[string]any)
	var comments []any
	for _, c := range th.Comments {
		cm := map[string]any{}
		for k, v := range proto {
			cm[k] = v
		}
		user := map[string]any{}
		for k, v := range proto["user"].(map[string]any) {
			user[k] = v
		}
		user["login"], user["type"] = c.Author, "User"
		if c.Author == h.fake.BotLogin() {
			user["type"] = "Bot"
		}
		cm["id"], cm["body"], cm["path"], cm["user"] = float64(c.ID), c.Body, c.Path, user
		comments = append(comments, cm)
	}
	thread["node_id"], thread["comments"] = th.ID, comments
	sender := m["sender"].(map[string]any)
	sender["login"], sender["type"] = resolver, "User"
	if bot {
		sender["type"] = "Bot"
	}
	body := mustJSON(h.t, m)
	spec, err := githubtest.LoadSpec()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := spec.ValidateWebhook("pull_request_review_thread", "resolved", body, "action", "thread", "sender"); err != nil {
		h.t.Fatalf("the thread event does not have GitHub's shape: %v", err)
	}
	return body
}

// TestResolvedThreadDismisses: a person with write access resolving the thread of a finding
// the last review still raised records a dismissal at once (the pull_request_review_thread
// webhook, no push needed); a reader resolving one records nothing; Aster's own resolution
// and a redelivery change nothing; the next push does not post the dismissed finding again
// and the summary counts it.
func TestResolvedThreadDismisses(t *testing.T) {
	forEachDB(t, func(t *testing.T, dbURL string) {
		rv := &scripted{}
		h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL})
		h.fake.SetPermission(h.owner, h.repo, "octocat", "write")
		h.fake.SetPermission(h.owner, h.repo, "mallory", "read")
		base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
		head1 := h.git.Commit(base, "one", map[string]string{"main.go": baseMain + "// TODO one\n// TODO two\n"})
		h.push("t-1", "opened", 41, base, head1, "")
		if r := h.waitHistory(41, 1, 20*time.Second)[0]; r.Outcome != store.OutcomePosted || r.InlineComments != 2 {
			t.Fatalf("first review: %+v", r)
		}
		threads := h.fake.Threads(h.owner, h.repo, 41)
		if len(threads) != 2 {
			t.Fatalf("%d threads, want 2", len(threads))
		}
		one, two := threads[0], threads[1]

		// Aster resolving a thread itself is not a dismissal: the event is not even stored.
		if got := h.deliver("pull_request_review_thread", "t-bot", h.threadResolvedEvent(41, one, h.fake.BotLogin(), true)); got != http.StatusOK {
			t.Fatalf("Aster's own resolution: %d, want 200 (ignored)", got)
		}

		h.fake.ResolveThread(h.owner, h.repo, one.Comments[0].ID, "octocat")
		ev := h.threadResolvedEvent(41, one, "octocat", false)
		if got := h.deliver("pull_request_review_thread", "t-octocat", ev); got != http.StatusAccepted {
			t.Fatalf("octocat's resolution: %d", got)
		}
		if r := h.waitHistory(41, 2, 20*time.Second)[1]; r.Outcome != store.OutcomeSkipped || r.Reason != "answered a thread resolved" || r.Cause != "thread" {
			t.Fatalf("record of the resolution: %+v", r)
		}
		ds, err := h.store.Dismissals(t.Context(), h.owner, h.repo)
		if err != nil || len(ds) != 1 || ds[0].By != "octocat" || ds[0].Reason != "resolved the thread" || ds[0].Path != "main.go" ||
			ds[0].Number != 41 || publish.Markers(one.Comments[0].Body)[0] != ds[0].FindingID {
			t.Fatalf("dismissals after octocat resolved a thread: %+v, %v", ds, err)
		}

		h.fake.ResolveThread(h.owner, h.repo, two.Comments[0].ID, "mallory")
		if got := h.deliver("pull_request_review_thread", "t-mallory", h.threadResolvedEvent(41, two, "mallory", false)); got != http.StatusAccepted {
			t.Fatalf("mallory's resolution: %d", got)
		}
		h.waitHistory(41, 3, 20*time.Second)
		// The same delivery again is a duplicate; the same body under a new id reads the
		// threads again and records nothing new.
		if got := h.deliver("pull_request_review_thread", "t-octocat", ev); got != http.StatusOK {
			t.Fatalf("redelivery: %d, want 200", got)
		}
		if got := h.deliver("pull_request_review_thread", "t-octocat-replay", ev); got != http.StatusAccepted {
			t.Fatalf("replay: %d", got)
		}
		h.waitHistory(41, 4, 20*time.Second)
		if ds, _ := h.store.Dismissals(t.Context(), h.owner, h.repo); len(ds) != 1 {
			t.Fatalf("dismissals after a reader's resolution and a replay: %+v", ds)
		}
		if n := len(h.fake.ReviewComments(h.owner, h.repo, 41)); n != 2 {
			t.Errorf("%d review comments, want the 2 findings and nothing said in their threads", n)
		}

		// The next push raises both again (the scripted reviewer forgets): the dismissed one
		// is suppressed, the other is still open; nothing is posted twice.
		head2 := h.git.Commit(head1, "two", map[string]string{"main.go": baseMain + "// TODO one\n// TODO two\nfunc x() {}\n"})
		h.push("t-2", "synchronize", 41, base, head2, head1)
		h.waitHistory(41, 5, 20*time.Second)
		if n := len(h.fake.ReviewComments(h.owner, h.repo, 41)); n != 2 {
			t.Errorf("%d review comments after the push, want still 2", n)
		}
		var summary string
		for _, c := range h.fake.IssueComments(h.owner, h.repo, 41) {
			if publish.IsSummary(c.Body) {
				summary = c.Body
			}
		}
		if !strings.Contains(summary, "1 dismissed on this repository") {
			t.Errorf("summary does not count the dismissal:\n%s", summary)
		}
	})
}

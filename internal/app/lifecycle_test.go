package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/store"
)

// threadOf returns the thread Aster opened on line n of run.sh.
func threadOf(t *testing.T, threads []githubtest.Thread, n int) githubtest.Thread {
	t.Helper()
	for _, th := range threads {
		if c := th.Comments[0]; c.Path == "run.sh" && c.Line == n {
			return th
		}
	}
	t.Fatalf("no thread on run.sh:%d in %+v", n, threads)
	return githubtest.Thread{}
}

// TestFixedFindingThreadResolved is a three-push pull request on the fake GitHub with the
// real gate in sandboxes: push 1 raises three findings (three threads); push 2 fixes one,
// whose thread is resolved with one reply saying which commit fixed it and what was run
// again; a redelivery changes nothing; push 3 adds nothing new: no new comment, no second
// reply, and the summary lists the findings still open; a dismissal by someone with write
// access is recorded and answered once, one by someone without is refused; push 4 repeats
// nothing. The dismissal lives in the store only (SQLite, and the Postgres replicas share).
func TestFixedFindingThreadResolved(t *testing.T) {
	forEachDB(t, testFixedFindingThreadResolved)
}

func testFixedFindingThreadResolved(t *testing.T, dbURL string) {
	runner := dockerGate(t, 2)
	h := newHarness(t, harnessOptions{reviewer: NewPipelineReviewer(PipelineOptions{Gate: runner, TempDir: t.TempDir()}), dbURL: dbURL})
	base := h.git.Commit("", "base", map[string]string{"README.md": "# widgets\n"})
	head1 := h.git.Commit(base, "scripts", map[string]string{"run.sh": "#!/bin/sh\ncd /tmp/a\ncd /tmp/b\ncd /tmp/c\n"})
	h.push("lc-1", "opened", 21, base, head1, "")
	if r := h.waitHistory(21, 1, 4*time.Minute)[0]; r.Outcome != store.OutcomePosted {
		t.Fatalf("push 1: %+v", r)
	}
	threads := h.fake.Threads("acme", "widgets", 21)
	if len(threads) != 3 {
		t.Fatalf("push 1: %d threads, want one per unchecked cd", len(threads))
	}

	head2 := h.git.Commit(head1, "check the first cd", map[string]string{"run.sh": "#!/bin/sh\ncd /tmp/a || exit 1\ncd /tmp/b\ncd /tmp/c\n"})
	h.push("lc-2", "synchronize", 21, base, head2, head1)
	h.waitHistory(21, 2, 4*time.Minute)
	threads = h.fake.Threads("acme", "widgets", 21)
	fixed := threadOf(t, threads, 2)
	if !fixed.Resolved || fixed.ResolvedBy != h.fake.BotLogin() || len(fixed.Comments) != 2 {
		t.Fatalf("fixed finding's thread: %+v", fixed)
	}
	reply := fixed.Comments[1].Body
	if !strings.Contains(reply, "fixed in `"+head2[:7]+"`") || !strings.Contains(reply, "shellcheck SC2164 on this file: no longer reported") {
		t.Errorf("reply %q", reply)
	}
	for _, n := range []int{3, 4} {
		if th := threadOf(t, threads, n); th.Resolved || len(th.Comments) != 1 {
			t.Errorf("thread on line %d of a finding still there: %+v", n, th)
		}
	}
	if n := len(h.fake.ReviewComments("acme", "widgets", 21)); n != 4 {
		t.Errorf("%d review comments after push 2, want the 3 findings and one reply", n)
	}

	// A redelivery of push 2 changes nothing.
	if got := h.deliver("pull_request", "lc-2", h.prEvent("synchronize", 21, head2, base, head1)); got >= 300 {
		t.Fatalf("redelivery: %d", got)
	}
	// Two people answer in the threads of the findings still there: octocat (write access)
	// dismisses one, mallory (read access) tries to dismiss the other.
	h.fake.SetPermission("acme", "widgets", "octocat", "write")
	h.fake.SetPermission("acme", "widgets", "mallory", "read")
	h.fake.AddReviewComment("acme", "widgets", githubtest.Comment{Number: 21, Author: "octocat", Path: "run.sh", Line: 3,
		Body: "/aster ignore the directory always exists", InReplyTo: threadOf(t, threads, 3).Comments[0].ID})
	h.fake.AddReviewComment("acme", "widgets", githubtest.Comment{Number: 21, Author: "mallory", Path: "run.sh", Line: 4,
		Body: "/aster ignore", InReplyTo: threadOf(t, threads, 4).Comments[0].ID})
	head3 := h.git.Commit(head2, "greet", map[string]string{"run.sh": "#!/bin/sh\ncd /tmp/a || exit 1\ncd /tmp/b\ncd /tmp/c\necho hi\n"})
	h.push("lc-3", "synchronize", 21, base, head3, head2)
	recs := h.waitHistory(21, 3, 4*time.Minute)
	if recs[2].InlineComments != 0 {
		t.Errorf("push 3 posted %d inline comments, want none", recs[2].InlineComments)
	}
	threads = h.fake.Threads("acme", "widgets", 21)
	if th := threadOf(t, threads, 2); len(th.Comments) != 2 {
		t.Errorf("fixed thread after push 3: %d comments, want no second reply", len(th.Comments))
	}
	dismissed := threadOf(t, threads, 3)
	if len(dismissed.Comments) != 3 || !strings.Contains(dismissed.Comments[2].Body, "Dismissed by `octocat`") {
		t.Errorf("dismissed thread: %+v", dismissed.Comments)
	}
	refused := threadOf(t, threads, 4)
	if len(refused.Comments) != 3 || !strings.Contains(refused.Comments[2].Body, "needs write access") {
		t.Errorf("refused command's thread: %+v", refused.Comments)
	}
	ds, err := h.store.Dismissals(t.Context(), "acme", "widgets")
	if err != nil || len(ds) != 1 || ds[0].By != "octocat" || ds[0].Reason != "the directory always exists" || ds[0].Path != "run.sh" {
		t.Fatalf("dismissals: %+v, %v", ds, err)
	}
	var summary string
	for _, c := range h.fake.IssueComments("acme", "widgets", 21) {
		if publish.IsSummary(c.Body) {
			summary = c.Body
		}
	}
	still, _, _ := strings.Cut(summary[strings.Index(summary, "### Still open from earlier pushes"):]+"\n\n###", "\n\n###")
	if strings.Count(still, "\n- ") != 1 || strings.Contains(still, "run.sh:3") || !strings.Contains(still, "run.sh:4") ||
		!strings.Contains(still, "since `"+head1[:7]+"`") {
		t.Errorf("summary's still-open list:\n%s\n\nsummary:\n%s", still, summary)
	}
	if !strings.Contains(summary, "1 dismissed on this repository") {
		t.Errorf("summary does not count the dismissed finding:\n%s", summary)
	}

	// Push 4 answers nothing twice, and the dismissal holds.
	head4 := h.git.Commit(head3, "greet twice", map[string]string{"run.sh": "#!/bin/sh\ncd /tmp/a || exit 1\ncd /tmp/b\ncd /tmp/c\necho hi\necho hi\n"})
	h.push("lc-4", "synchronize", 21, base, head4, head3)
	h.waitHistory(21, 4, 4*time.Minute)
	if n := len(h.fake.ReviewComments("acme", "widgets", 21)); n != 8 {
		t.Errorf("%d review comments after push 4, want 8: 3 findings, 1 fix reply, 2 commands, 2 answers", n)
	}

	// /aster resolve (re-check now; a full re-review of the same head) re-checks against
	// the review it replaces: the summary still lists what is open, nothing is posted again.
	if got := h.deliver("issue_comment", "lc-5", h.commentEvent(21, "octocat", "/aster resolve")); got != 202 {
		t.Fatalf("/aster resolve: %d", got)
	}
	h.waitHistory(21, 5, 4*time.Minute)
	if n := len(h.fake.ReviewComments("acme", "widgets", 21)); n != 8 {
		t.Errorf("%d review comments after /aster resolve, want 8", n)
	}
	for _, c := range h.fake.IssueComments("acme", "widgets", 21) {
		if publish.IsSummary(c.Body) && (!strings.Contains(c.Body, "### Still open from earlier pushes") || !strings.Contains(c.Body, "run.sh:4")) {
			t.Errorf("summary after /aster resolve:\n%s", c.Body)
		}
	}
	assertNoRepeatsOn(t, h, 21)
}

// threadResolvedEvent is GitHub's example pull_request_review_thread "resolved" delivery
// for thread th of pull request number, resolved by resolver (a bot when bot is set),
// checked against the schema of GitHub's description where Aster reads it.
func (h *harness) threadResolvedEvent(number int, th githubtest.Thread, resolver string, bot bool) []byte {
	h.t.Helper()
	return h.webhookPayload("pull_request_review_thread", "resolved", resolver, bot, []string{"thread"}, func(m map[string]any) {
		m["pull_request"].(map[string]any)["number"] = float64(number)
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
	})
}

// webhookPayload is GitHub's example delivery of event and action, pointed at the
// harness's repository and installation, sent by sender (a bot or a user), changed by fill,
// and checked against the webhook's schema in GitHub's OpenAPI description (the parts named,
// with action and sender).
func (h *harness) webhookPayload(event, action, sender string, bot bool, parts []string, fill func(map[string]any)) []byte {
	h.t.Helper()
	m := example(h.t, event, action)
	h.repoJSON(m["repository"].(map[string]any))
	m["installation"] = map[string]any{"id": float64(h.fake.InstallationID())}
	s := m["sender"].(map[string]any)
	s["login"], s["type"] = sender, "User"
	if bot {
		s["type"] = "Bot"
	}
	fill(m)
	body := mustJSON(h.t, m)
	spec, err := githubtest.LoadSpec()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := spec.ValidateWebhook(event, action, body, append([]string{"action", "sender"}, parts...)...); err != nil {
		h.t.Fatalf("the %s event does not have GitHub's shape: %v", event, err)
	}
	return body
}

// twoTODOThreads opens pull request number with two TODOs, which the scripted reviewer
// comments on (two threads of Aster's), with octocat a writer and mallory a reader of the
// repository; it returns the base, the head and the threads.
func (h *harness) twoTODOThreads(number int) (base, head string, threads []githubtest.Thread) {
	h.t.Helper()
	h.fake.SetPermission(h.owner, h.repo, "octocat", "write")
	h.fake.SetPermission(h.owner, h.repo, "mallory", "read")
	base = h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head = h.git.Commit(base, "one", map[string]string{"main.go": baseMain + "// TODO one\n// TODO two\n"})
	h.push(fmt.Sprintf("todo-%d", number), "opened", number, base, head, "")
	if r := h.waitHistory(number, 1, 20*time.Second)[0]; r.Outcome != store.OutcomePosted || r.InlineComments != 2 {
		h.t.Fatalf("first review: %+v", r)
	}
	threads = h.fake.Threads(h.owner, h.repo, number)
	if len(threads) != 2 {
		h.t.Fatalf("%d threads, want 2", len(threads))
	}
	return base, head, threads
}

// TestResolvedThreadDismisses: a person with write access resolving the thread of a finding
// the last review still raised records a dismissal at once (the pull_request_review_thread
// webhook, no push needed); a reader resolving one records nothing; Aster's own resolution
// and a redelivery change nothing; the next push does not post the dismissed finding again
// and the summary counts it.
func TestResolvedThreadDismisses(t *testing.T) {
	forEachDB(t, func(t *testing.T, dbURL string) {
		h := newHarness(t, harnessOptions{reviewer: &scripted{}, dbURL: dbURL})
		base, head1, threads := h.twoTODOThreads(41)
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
		if r := h.waitHistory(41, 2, 20*time.Second)[1]; r.Outcome != store.OutcomeSkipped || r.Reason != "answered the review threads" || r.Cause != "thread" {
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

// threadCommandEvent is GitHub's example pull_request_review_comment "created" delivery for
// comment c (a reply in a thread), written by c.Author, checked against the webhook's schema.
func (h *harness) threadCommandEvent(c githubtest.Comment) []byte {
	h.t.Helper()
	return h.webhookPayload("pull_request_review_comment", "created", c.Author, false, []string{"comment"}, func(m map[string]any) {
		m["pull_request"].(map[string]any)["number"] = float64(c.Number)
		cm := m["comment"].(map[string]any)
		cm["id"], cm["body"], cm["path"], cm["in_reply_to_id"] = float64(c.ID), c.Body, c.Path, float64(c.InReplyTo)
		cm["user"].(map[string]any)["login"] = c.Author
		githubtest.CompleteReviewComment(cm, c.Line)
	})
}

// TestThreadCommandActsAtOnce: "/aster ignore" in one of Aster's threads by someone with
// write access records the dismissal and is answered in the thread at once (the
// pull_request_review_comment webhook, no push needed); a reader's command is answered with a
// refusal and records nothing; a redelivery and a replay answer nothing twice; "/aster
// unignore" undoes the dismissal at once; "/aster ignore" in the conversation is answered
// with where it works.
func TestThreadCommandActsAtOnce(t *testing.T) {
	forEachDB(t, func(t *testing.T, dbURL string) {
		h := newHarness(t, harnessOptions{reviewer: &scripted{}, dbURL: dbURL})
		_, _, threads := h.twoTODOThreads(43)
		one, two := threads[0].Comments[0], threads[1].Comments[0]
		reply := func(to githubtest.Comment, author, body string) githubtest.Comment {
			c := githubtest.Comment{Number: 43, Author: author, Path: to.Path, Line: to.Line, Body: body, InReplyTo: to.ID}
			c.ID = h.fake.AddReviewComment(h.owner, h.repo, c)
			return c
		}
		thread := func(first githubtest.Comment) []githubtest.Comment {
			for _, th := range h.fake.Threads(h.owner, h.repo, 43) {
				if th.Comments[0].ID == first.ID {
					return th.Comments
				}
			}
			t.Fatalf("thread of comment %d gone", first.ID)
			return nil
		}

		ignore := reply(one, "octocat", "/aster ignore generated code")
		ev := h.threadCommandEvent(ignore)
		if got := h.deliver("pull_request_review_comment", "c-octocat", ev); got != http.StatusAccepted {
			t.Fatalf("octocat's /aster ignore: %d", got)
		}
		if r := h.waitHistory(43, 2, 20*time.Second)[1]; r.Outcome != store.OutcomeSkipped || r.Reason != "answered the review threads" || r.Cause != "thread" {
			t.Fatalf("record of the command: %+v", r)
		}
		ds, err := h.store.Dismissals(t.Context(), h.owner, h.repo)
		if err != nil || len(ds) != 1 || ds[0].By != "octocat" || ds[0].Reason != "generated code" || ds[0].Path != "main.go" ||
			ds[0].Number != 43 || publish.Markers(one.Body)[0] != ds[0].FindingID {
			t.Fatalf("dismissals after /aster ignore: %+v, %v", ds, err)
		}
		if cs := thread(one); len(cs) != 3 || cs[2].Author != h.fake.BotLogin() || !strings.Contains(cs[2].Body, "Dismissed by `octocat`") {
			t.Fatalf("thread after /aster ignore: %+v", cs)
		}

		refused := reply(two, "mallory", "/aster ignore")
		if got := h.deliver("pull_request_review_comment", "c-mallory", h.threadCommandEvent(refused)); got != http.StatusAccepted {
			t.Fatalf("mallory's /aster ignore: %d", got)
		}
		h.waitHistory(43, 3, 20*time.Second)
		if cs := thread(two); len(cs) != 3 || !strings.Contains(cs[2].Body, "needs write access") {
			t.Fatalf("thread after a reader's command: %+v", cs)
		}
		if ds, _ := h.store.Dismissals(t.Context(), h.owner, h.repo); len(ds) != 1 {
			t.Fatalf("dismissals after a reader's command: %+v", ds)
		}

		// The same delivery again is a duplicate; the same body under a new id reads the
		// threads again and answers nothing twice.
		if got := h.deliver("pull_request_review_comment", "c-octocat", ev); got != http.StatusOK {
			t.Fatalf("redelivery: %d, want 200", got)
		}
		if got := h.deliver("pull_request_review_comment", "c-octocat-replay", ev); got != http.StatusAccepted {
			t.Fatalf("replay: %d", got)
		}
		h.waitHistory(43, 4, 20*time.Second)
		if n := len(h.fake.ReviewComments(h.owner, h.repo, 43)); n != 6 {
			t.Errorf("%d review comments, want 2 findings, 2 commands and 2 answers", n)
		}

		undo := reply(one, "octocat", "/aster unignore")
		if got := h.deliver("pull_request_review_comment", "c-undo", h.threadCommandEvent(undo)); got != http.StatusAccepted {
			t.Fatalf("/aster unignore: %d", got)
		}
		h.waitHistory(43, 5, 20*time.Second)
		if ds, _ := h.store.Dismissals(t.Context(), h.owner, h.repo); len(ds) != 0 {
			t.Errorf("dismissals after /aster unignore: %+v", ds)
		}
		if cs := thread(one); len(cs) != 5 || !strings.Contains(cs[4].Body, "Undone by `octocat`") {
			t.Errorf("thread after /aster unignore: %+v", cs)
		}

		// In the conversation a thread command has no finding to act on: it is answered
		// once, in place, with where it works, and dismisses nothing.
		before := len(h.fake.IssueComments(h.owner, h.repo, 43))
		if got := h.deliver("issue_comment", "c-conversation", h.commentEventAs("created", 901, "", 43, "mallory", "/aster ignore all of it")); got != http.StatusAccepted {
			t.Fatalf("/aster ignore in the conversation: %d", got)
		}
		if r := h.waitHistory(43, 6, 20*time.Second)[5]; r.Outcome != store.OutcomeSkipped || r.Reason != "answered /aster ignore (in the conversation) by mallory" {
			t.Fatalf("record of the conversation's /aster ignore: %+v", r)
		}
		cs := h.fake.IssueComments(h.owner, h.repo, 43)
		if len(cs) != before+1 || !strings.Contains(cs[len(cs)-1].Body, "work in a reply to one of Aster's comments") {
			t.Errorf("answer in the conversation: %+v", cs[before:])
		}
		if ds, _ := h.store.Dismissals(t.Context(), h.owner, h.repo); len(ds) != 0 {
			t.Errorf("dismissals after a conversation's /aster ignore: %+v", ds)
		}
	})
}

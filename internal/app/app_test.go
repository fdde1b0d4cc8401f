package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/store/storetest"
	"github.com/asterhq/aster/internal/testkit"
)

const baseMain = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"

// TestReviewPushAndCommand walks one pull request through its life: opened → review,
// summary and check run; a push → only the new lines reviewed, nothing repeated, summary
// edited in place; the same delivery again → nothing; /aster review from a reader →
// refused; from a writer → a full re-review that repeats nothing.
func TestReviewPushAndCommand(t *testing.T) {
	forEachDB(t, testReviewPushAndCommand)
}

// forEachDB runs fn on SQLite, and on Postgres when ASTER_TEST_POSTGRES_URL is set.
func forEachDB(t *testing.T, fn func(t *testing.T, dbURL string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, "") })
	t.Run("postgres", func(t *testing.T) { fn(t, storetest.PostgresURL(t)) })
}

func testReviewPushAndCommand(t *testing.T, dbURL string) {
	rv := &scripted{}
	h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain, "README.md": "# widgets\n"})
	head1 := h.git.Commit(base, "one", map[string]string{
		"main.go": baseMain + "\n// TODO one\nfunc one() {} // BUG one\n",
		"util.go": "package main\n\n// FIXME util\nfunc util() {}\n",
	})
	h.push("d-open", "opened", 7, base, head1, "")
	recs := h.waitHistory(7, 1, 20*time.Second)
	if r := recs[0]; r.Outcome != store.OutcomePosted || r.HeadSHA != head1 || r.SinceSHA != "" || r.Conclusion != ConclusionFailure ||
		r.InlineComments != 3 || r.InputTokens != 1000 || r.CostUSD != 0.01 || r.Cause != "opened" {
		t.Fatalf("first review record: %+v", r)
	}
	reviews := h.fake.Reviews("acme", "widgets", 7)
	if len(reviews) != 1 || reviews[0].Event != "COMMENT" || reviews[0].CommitID != head1 || len(reviews[0].Comments) != 3 {
		t.Fatalf("first review: %+v", reviews)
	}
	summaries := h.fake.IssueComments("acme", "widgets", 7)
	if len(summaries) != 1 || !publish.IsSummary(summaries[0].Body) || !strings.Contains(summaries[0].Body, review.ShortSHA(head1)) ||
		!strings.Contains(summaries[0].Body, "the whole pull request") {
		t.Fatalf("summary after the first review: %+v", summaries)
	}
	for _, want := range []string{"1 error, 1 warning", "1000 in, 100 out", "$0.0100", "Looks mostly fine", "fixme"} {
		if !strings.Contains(summaries[0].Body, want) {
			t.Errorf("summary lacks %q:\n%s", want, summaries[0].Body)
		}
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Name != CheckRunName || runs[0].HeadSHA != head1 || runs[0].Status != "completed" ||
		runs[0].Conclusion != "failure" || len(runs[0].Annotations) != 2 {
		t.Fatalf("first check run: %+v", runs)
	}
	if files := rv.files[0]; !contains(files, "main.go") || !contains(files, "util.go") || contains(files, ".git") {
		t.Fatalf("snapshot entries %v: want the tree without its top directory", files)
	}
	if in := rv.calls()[0]; in.Base.SHA != base || in.Head.SHA != head1 || in.Config != nil || in.Title != "Add things" {
		t.Fatalf("reviewer input: %+v", in)
	}

	// A push: two more lines to look at.
	head2 := h.git.Commit(head1, "two", map[string]string{
		"main.go": baseMain + "\n// TODO one\nfunc one() {} // BUG one\n\n// TODO two\nfunc two() {} // BUG two\n",
	})
	h.push("d-sync", "synchronize", 7, base, head2, head1)
	recs = h.waitHistory(7, 2, 20*time.Second)
	if r := recs[1]; r.Outcome != store.OutcomePosted || r.HeadSHA != head2 || r.SinceSHA != head1 || r.InlineComments != 2 {
		t.Fatalf("second review record: %+v", r)
	}
	reviews = h.fake.Reviews("acme", "widgets", 7)
	if len(reviews) != 2 {
		t.Fatalf("reviews after the push: %d, want 2", len(reviews))
	}
	for _, c := range reviews[1].Comments {
		if !strings.Contains(c.Body, "two") {
			t.Errorf("the push's review commented on an old line: %s:%d %q", c.Path, c.Line, c.Body)
		}
	}
	assertNoRepeats(t, h)
	in2 := rv.calls()[1]
	if in2.SinceSHA != head1 || !strings.Contains(string(in2.IncrementalDiff), "+func two") || strings.Contains(string(in2.IncrementalDiff), "+func one") {
		t.Fatalf("incremental input: since %q, diff:\n%s", in2.SinceSHA, in2.IncrementalDiff)
	}
	summaries = h.fake.IssueComments("acme", "widgets", 7)
	if len(summaries) != 1 || !strings.Contains(summaries[0].Body, "changes since") || !strings.Contains(summaries[0].Body, review.ShortSHA(head2)) {
		t.Fatalf("summary not edited in place: %d comments: %+v", len(summaries), summaries)
	}
	runs = h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 2 || runs[1].HeadSHA != head2 || runs[1].Status != "completed" {
		t.Fatalf("check runs after the push: %+v", runs)
	}

	// The same delivery again: answered, nothing else.
	if got := h.deliver("pull_request", "d-sync", h.prEvent("synchronize", 7, head2, base, head1)); got != http.StatusOK {
		t.Fatalf("duplicate delivery: %d, want 200", got)
	}
	jobs, _ := h.store.Jobs(context.Background())
	if len(jobs) != 2 {
		t.Fatalf("jobs after a duplicate delivery: %d, want 2", len(jobs))
	}

	// /aster review from someone who may only read: refused, nothing posted.
	h.fake.SetPermission("acme", "widgets", "reader", "read")
	if got := h.deliver("issue_comment", "d-cmd-1", h.commentEvent(7, "reader", "/aster review")); got != http.StatusAccepted {
		t.Fatalf("command: %d", got)
	}
	recs = h.waitHistory(7, 3, 20*time.Second)
	if r := recs[2]; r.Outcome != store.OutcomeSkipped || !strings.Contains(r.Reason, "refused") {
		t.Fatalf("command by a reader: %+v", r)
	}
	// From a writer: a full re-review; everything it finds is already there.
	h.fake.SetPermission("acme", "widgets", "maintainer", "maintain")
	if got := h.deliver("issue_comment", "d-cmd-2", h.commentEvent(7, "maintainer", "/aster review please")); got != http.StatusAccepted {
		t.Fatalf("command: %d", got)
	}
	recs = h.waitHistory(7, 4, 20*time.Second)
	if r := recs[3]; r.Outcome != store.OutcomeNothingNew || r.SinceSHA != "" || r.Cause != "command" {
		t.Fatalf("command by a maintainer: %+v", r)
	}
	if n := len(h.fake.Reviews("acme", "widgets", 7)); n != 2 {
		t.Fatalf("a re-review that found nothing new posted a review (%d reviews)", n)
	}
	if s := h.fake.IssueComments("acme", "widgets", 7); len(s) != 1 || !strings.Contains(s[0].Body, "the whole pull request") {
		t.Fatalf("summary after the re-review: %+v", s)
	}
	assertNoRepeats(t, h)
	h.assertNoSecrets()
	for _, r := range h.fake.Requests() {
		if r.Operation == "pulls/create-review" && r.Status != http.StatusOK {
			t.Errorf("a review post was refused: %+v", r)
		}
	}
}

// assertNoRepeats fails when one fingerprint was posted twice.
func assertNoRepeats(t *testing.T, h *harness) {
	t.Helper()
	seen := map[string]string{}
	for _, r := range h.fake.Reviews(h.owner, h.repo, 7) {
		for _, body := range append([]string{r.Body}, bodies(r.Comments)...) {
			for _, fp := range publish.Markers(body) {
				if prev, ok := seen[fp]; ok {
					t.Errorf("comment repeated: %q and %q", prev, body)
				}
				seen[fp] = body
			}
		}
	}
}

func bodies(cs []githubtest.Comment) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Body)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRacingEventsOneReviewPerSHA sends opened and synchronize for one head at once, and
// again while its review runs: one review, one check run, one job for that head (the late
// ones fold into the running job, as a replay under a new delivery id does: SECURITY H6).
func TestRacingEventsOneReviewPerSHA(t *testing.T) {
	forEachDB(t, testRacingEvents)
}

func testRacingEvents(t *testing.T, dbURL string) {
	rv := &scripted{block: make(chan struct{})}
	h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL, queue: store.QueueOptions{Workers: 4}})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// BUG here\n"})
	h.openPR(3, base, head)

	// reopened first, on its own: it never joins a running job (it changes whether the job
	// reviews at all), so sent among the others it would make a second job whenever a
	// worker claimed the first before it arrived, a race the test does not own. The other
	// three race each other and the worker's claim: each joins the job, waiting or running.
	if got := h.deliver("pull_request", "race-reopened", h.prEvent("reopened", 3, head, base, base)); got != http.StatusAccepted {
		t.Fatalf("reopened: %d", got)
	}
	var wg sync.WaitGroup
	for i, action := range []string{"opened", "synchronize", "synchronize"} {
		body := h.prEvent(action, 3, head, base, base) // may t.Fatal: on this goroutine
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := h.deliver("pull_request", fmt.Sprintf("race-%d", i), body); got != http.StatusAccepted {
				t.Errorf("%s: %d", action, got)
			}
		}()
	}
	wg.Wait()
	// The review is running (blocked in the reviewer) when these arrive.
	testkit.WaitFor(t, "the review to start", 10*time.Second, func() bool {
		p, _, _ := h.store.Pull(context.Background(), store.PullKey{Owner: "acme", Repo: "widgets", Number: 3})
		return p.RunningJob != 0
	})
	for i, action := range []string{"synchronize", "opened"} {
		if got := h.deliver("pull_request", fmt.Sprintf("late-%d", i), h.prEvent(action, 3, head, base, base)); got != http.StatusAccepted {
			t.Fatalf("%s during the run: %d", action, got)
		}
	}
	close(rv.block)
	// The late ones announce the head being reviewed: they fold into the running job.
	recs := h.waitHistory(3, 1, 20*time.Second)
	if recs[0].Outcome != store.OutcomePosted {
		t.Fatalf("history: %+v", recs)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(h.history(3)); n != 1 {
		t.Fatalf("%d history records, want 1", n)
	}
	if n := len(h.fake.Reviews("acme", "widgets", 3)); n != 1 {
		t.Fatalf("%d reviews for one head, want 1", n)
	}
	if n := len(h.fake.CheckRuns("acme", "widgets")); n != 1 {
		t.Fatalf("%d check runs for one head, want 1", n)
	}
	if n := len(rv.calls()); n != 1 {
		t.Fatalf("the head was reviewed %d times, want 1", n)
	}
	jobs, _ := h.store.Jobs(context.Background())
	if len(jobs) != 1 {
		t.Fatalf("%d jobs for 6 deliveries (4 together, 2 during the run), want 1: %+v", len(jobs), jobs)
	}
}

// TestBadSignaturesStoreNothing is SECURITY H1-H2: GitHub's own test vector, then missing,
// sha1-only, wrong-secret and one-byte-flipped signatures get 401 and leave no trace.
func TestBadSignaturesStoreNothing(t *testing.T) {
	const vector = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := github.Sign([]byte("It's a Secret to Everybody"), []byte("Hello, World!")); got != vector {
		t.Fatalf("GitHub's test vector: %s, want %s", got, vector)
	}
	h := newHarness(t, harnessOptions{reviewer: &scripted{}})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// BUG\n"})
	h.openPR(1, base, head)
	body := h.prEvent("opened", 1, head, base, "")
	good := github.Sign(h.secret, body)
	flipped := []byte(good)
	if flipped[len(flipped)-1] == '0' {
		flipped[len(flipped)-1] = '1'
	} else {
		flipped[len(flipped)-1] = '0'
	}
	tamperedBody := append([]byte(nil), body...)
	tamperedBody[10] ^= 1
	cases := []struct {
		name, sig string
		body      []byte
	}{
		{"missing", "", body},
		{"sha1 only", "sha1=0123456789abcdef0123456789abcdef01234567", body},
		{"wrong secret", github.Sign([]byte("not the secret"), body), body},
		{"flipped signature byte", string(flipped), body},
		{"flipped body byte", good, tamperedBody},
		{"test vector of another body", vector, body},
	}
	for _, c := range cases {
		if got := h.deliverSigned("pull_request", "bad-"+strings.ReplaceAll(c.name, " ", "-"), c.body, c.sig); got != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", c.name, got)
		}
	}
	time.Sleep(200 * time.Millisecond)
	counts, err := h.store.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if counts != (store.Counts{}) {
		t.Fatalf("bad signatures left rows: %+v", counts)
	}
	if jobs, _ := h.store.Jobs(context.Background()); len(jobs) != 0 {
		t.Fatalf("bad signatures enqueued %d jobs", len(jobs))
	}
	if n := len(h.fake.Requests()); n != 0 {
		t.Fatalf("bad signatures caused %d GitHub requests", n)
	}
	// The good one still works afterwards.
	if got := h.deliver("pull_request", "good", body); got != http.StatusAccepted {
		t.Fatalf("good delivery after bad ones: %d", got)
	}
	h.waitHistory(1, 1, 20*time.Second)
}

// TestForkPullRequest: a pull request from a fork is reviewed like any other; its commits
// are read from the base repository, and everything is posted there.
func TestForkPullRequest(t *testing.T) {
	rv := &scripted{}
	h := newHarness(t, harnessOptions{reviewer: rv})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "from a fork", map[string]string{"main.go": baseMain + "// BUG from a fork\n"})
	h.fake.AddPullRequest("acme", "widgets", githubtest.PullRequest{Number: 21, Title: "Fork change", BaseRef: "main",
		BaseSHA: base, HeadRef: "patch-1", HeadSHA: head, HeadOwner: "stranger", HeadName: "widgets-fork", Author: "stranger"})
	var m map[string]any
	if err := json.Unmarshal(h.prEvent("opened", 21, head, base, ""), &m); err != nil {
		t.Fatal(err)
	}
	hr := m["pull_request"].(map[string]any)["head"].(map[string]any)["repo"].(map[string]any)
	hr["id"], hr["name"], hr["full_name"] = float64(777), "widgets-fork", "stranger/widgets-fork"
	hr["owner"].(map[string]any)["login"] = "stranger"
	body, _ := json.Marshal(m)
	if got := h.deliver("pull_request", "fork-1", body); got != http.StatusAccepted {
		t.Fatalf("fork pull request: %d", got)
	}
	if r := h.waitHistory(21, 1, 20*time.Second)[0]; r.Outcome != store.OutcomePosted {
		t.Fatalf("fork review: %+v", r)
	}
	if in := rv.calls()[0]; !in.Fork || in.Author != "stranger" {
		t.Fatalf("reviewer input for a fork: fork=%v author=%q", in.Fork, in.Author)
	}
	if n := len(h.fake.Reviews("acme", "widgets", 21)); n != 1 {
		t.Fatalf("%d reviews on the fork's pull request", n)
	}
}

package app

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/store"
)

// linesRan is the scripted reviewer with its analyzer ("lines") reported as having run and
// its findings fingerprinted (by their text), so that a finding it no longer reports is
// resolved.
type linesRan struct{ inner *scripted }

func (l linesRan) Review(ctx context.Context, in ReviewInput) (*review.Report, error) {
	rep, err := l.inner.Review(ctx, in)
	if err == nil {
		rep.Analyzers = append(rep.Analyzers, gate.AnalyzerResult{Name: "lines", Status: gate.StatusOK})
		for i := range rep.Findings {
			rep.Findings[i].Fingerprint = finding.LegacyFingerprint(rep.Findings[i].Finding)
		}
	}
	return rep, err
}

// resolveLost resolves a thread on GitHub and then loses GitHub's answer, once: the
// attempt fails between resolving the thread and recording that it did, as a crash there
// would leave it.
type resolveLost struct {
	RepoAPI
	lost *atomic.Bool
}

func (r resolveLost) ResolveReviewThread(ctx context.Context, id string) error {
	if err := r.RepoAPI.ResolveReviewThread(ctx, id); err != nil {
		return err
	}
	if r.lost.CompareAndSwap(false, true) {
		return errors.New("connection reset (the thread was resolved)")
	}
	return nil
}

func threadOn(t *testing.T, h *harness, number, line int) githubtest.Thread {
	t.Helper()
	for _, th := range h.fake.Threads(h.owner, h.repo, number) {
		if th.Comments[0].Line == line && th.Comments[0].Path == "main.go" {
			return th
		}
	}
	t.Fatalf("no thread on main.go:%d", line)
	return githubtest.Thread{}
}

func summaryOf(h *harness, number int) string {
	for _, c := range h.fake.IssueComments(h.owner, h.repo, number) {
		if publish.IsSummary(c.Body) {
			return c.Body
		}
	}
	return ""
}

// TestDismissalSurvivesRestartsReplicasAndCrashes: push 1 raises three findings; push 2
// fixes one while octocat dismisses another with /aster ignore. GitHub's answer to resolving
// the fixed finding's thread is lost, so the attempt fails after the thread was resolved and
// before that was recorded: the retry replies and resolves nothing twice. The App is then
// restarted (a new process on the same database): push 3 still treats the dismissed error
// as dismissed (the check passes, the summary counts it). A redelivery and an out-of-order
// push (an event for the older head 2 arriving last) post nothing. On Postgres a second
// replica reviews push 4 with the same memory. No comment is ever posted twice.
func TestDismissalSurvivesRestartsReplicasAndCrashes(t *testing.T) {
	forEachDB(t, func(t *testing.T, dbURL string) {
		var lost atomic.Bool
		h := newHarness(t, harnessOptions{reviewer: linesRan{&scripted{}}, dbURL: dbURL,
			queue: store.QueueOptions{ClientID: "replica-a"},
			wrap:  func(api RepoAPI) RepoAPI { return resolveLost{RepoAPI: api, lost: &lost} }})
		h.fake.SetPermission(h.owner, h.repo, "octocat", "write")
		lines := func(extra ...string) string { return baseMain + strings.Join(extra, "") }
		base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
		head1 := h.git.Commit(base, "one", map[string]string{"main.go": lines("// TODO a\n", "// FIXME b\n", "// TODO c\n")})
		h.push("m-1", "opened", 61, base, head1, "")
		if r := h.waitHistory(61, 1, 20*time.Second)[0]; r.Outcome != store.OutcomePosted || r.Conclusion != ConclusionFailure || r.InlineComments != 3 {
			t.Fatalf("push 1: %+v", r)
		}
		nA := strings.Count(baseMain, "\n") + 1
		thA, thB := threadOn(t, h, 61, nA), threadOn(t, h, 61, nA+1)

		h.fake.AddReviewComment(h.owner, h.repo, githubtest.Comment{Number: 61, Author: "octocat", Path: "main.go", Line: nA + 1,
			Body: "/aster ignore generated code", InReplyTo: thB.Comments[0].ID})
		head2 := h.git.Commit(head1, "fix a", map[string]string{"main.go": lines("// done a\n", "// FIXME b\n", "// TODO c\n")})
		h.push("m-2", "synchronize", 61, base, head2, head1)
		if r := h.waitHistory(61, 2, 20*time.Second)[1]; r.HeadSHA != head2 || r.Conclusion != ConclusionSuccess {
			t.Fatalf("push 2: %+v (the dismissed error must no longer fail the check)", r)
		}
		if !lost.Load() {
			t.Fatal("the thread's resolution was never lost: the test proves nothing")
		}
		if th := threadOn(t, h, 61, nA); !th.Resolved || len(th.Comments) != 2 || th.Comments[0].ID != thA.Comments[0].ID {
			t.Fatalf("fixed thread after a lost resolution: resolved %v, %d comments, want resolved with one reply", th.Resolved, len(th.Comments))
		}
		if th := threadOn(t, h, 61, nA+1); len(th.Comments) != 3 || !strings.Contains(th.Comments[2].Body, "Dismissed by `octocat`") {
			t.Fatalf("dismissed thread: %+v", th.Comments)
		}

		// A restart: the same replica id, a new process on the same database.
		h.stop()
		h2 := h.sibling("replica-a")
		head3 := h.git.Commit(head2, "d", map[string]string{"main.go": lines("// done a\n", "// FIXME b\n", "// TODO c\n", "// TODO d\n")})
		h2.push("m-3", "synchronize", 61, base, head3, head2)
		if r := h2.waitHistory(61, 3, 20*time.Second)[2]; r.HeadSHA != head3 || r.Conclusion != ConclusionSuccess || r.InlineComments != 1 {
			t.Fatalf("push 3 after the restart: %+v", r)
		}
		if s := summaryOf(h2, 61); !strings.Contains(s, "1 dismissed on this repository") {
			t.Errorf("summary after the restart:\n%s", s)
		}

		// A redelivery, and the event of head 2 arriving after head 3's: nothing posted.
		comments, reviews := len(h.fake.ReviewComments(h.owner, h.repo, 61)), len(h.fake.Reviews(h.owner, h.repo, 61))
		if got := h2.deliver("pull_request", "m-3", h2.prEvent("synchronize", 61, head3, base, head2)); got != http.StatusOK {
			t.Fatalf("redelivery: %d, want 200", got)
		}
		if got := h2.deliver("pull_request", "m-2-late", h2.prEvent("synchronize", 61, head2, base, head1)); got != http.StatusAccepted {
			t.Fatalf("late event: %d", got)
		}
		if r := h2.waitHistory(61, 4, 20*time.Second)[3]; r.Outcome != store.OutcomeSkipped || r.HeadSHA != head3 {
			t.Fatalf("the late event of an older head: %+v, want skipped on head 3", r)
		}
		if c, r := len(h.fake.ReviewComments(h.owner, h.repo, 61)), len(h.fake.Reviews(h.owner, h.repo, 61)); c != comments || r != reviews {
			t.Fatalf("a redelivery or a late event posted: %d comments (was %d), %d reviews (was %d)", c, comments, r, reviews)
		}

		if dbURL != "" {
			// Another replica beside the restarted one, sharing the database.
			h3 := h2.sibling("replica-b")
			head4 := h.git.Commit(head3, "e", map[string]string{"main.go": lines("// done a\n", "// FIXME b\n", "// TODO c\n", "// TODO d\n", "// TODO e\n")})
			h3.push("m-4", "synchronize", 61, base, head4, head3)
			if r := h3.waitHistory(61, 5, 20*time.Second)[4]; r.HeadSHA != head4 || r.Conclusion != ConclusionSuccess || r.InlineComments != 1 {
				t.Fatalf("push 4 on the second replica: %+v", r)
			}
			if s := summaryOf(h3, 61); !strings.Contains(s, "1 dismissed on this repository") {
				t.Errorf("summary on the second replica:\n%s", s)
			}
		}
		if th := threadOn(t, h, 61, nA); len(th.Comments) != 2 {
			t.Errorf("fixed thread: %d comments at the end, want the finding and one reply", len(th.Comments))
		}
		if th := threadOn(t, h, 61, nA+1); len(th.Comments) != 3 {
			t.Errorf("dismissed thread: %d comments at the end, want finding, command, one answer", len(th.Comments))
		}
		assertNoRepeatsOn(t, h, 61)
	})
}

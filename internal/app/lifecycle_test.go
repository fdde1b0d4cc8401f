package app

import (
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
// reply, and the summary lists the two findings still open.
func TestFixedFindingThreadResolved(t *testing.T) {
	runner := dockerGate(t, 2)
	h := newHarness(t, harnessOptions{reviewer: NewPipelineReviewer(PipelineOptions{Gate: runner, TempDir: t.TempDir()})})
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
	head3 := h.git.Commit(head2, "greet", map[string]string{"run.sh": "#!/bin/sh\ncd /tmp/a || exit 1\ncd /tmp/b\ncd /tmp/c\necho hi\n"})
	h.push("lc-3", "synchronize", 21, base, head3, head2)
	recs := h.waitHistory(21, 3, 4*time.Minute)
	if recs[2].InlineComments != 0 {
		t.Errorf("push 3 posted %d inline comments, want none", recs[2].InlineComments)
	}
	if n := len(h.fake.ReviewComments("acme", "widgets", 21)); n != 4 {
		t.Errorf("%d review comments after push 3, want 4: nothing new, no second reply", n)
	}
	var summary string
	for _, c := range h.fake.IssueComments("acme", "widgets", 21) {
		if publish.IsSummary(c.Body) {
			summary = c.Body
		}
	}
	still, _, _ := strings.Cut(summary[strings.Index(summary, "### Still open from earlier pushes"):]+"\n\n###", "\n\n###")
	if strings.Count(still, "\n- ") != 2 || !strings.Contains(still, "run.sh:3") || !strings.Contains(still, "run.sh:4") ||
		!strings.Contains(still, "since `"+head1[:7]+"`") {
		t.Errorf("summary's still-open list:\n%s\n\nsummary:\n%s", still, summary)
	}
	assertNoRepeatsOn(t, h, 21)
}

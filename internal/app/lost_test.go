package app

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/store"
)

// shellOnly is a base .aster.yml that leaves ShellCheck the only analyzer (Semgrep has no
// rules here), so the test counts ShellCheck's findings alone.
const shellOnly = "fail_on: never\nanalyzers:\n  gitleaks:\n    enabled: false\n  bandit:\n    enabled: false\n"

// legacyReviewer is the real pipeline; while old is set it gives the findings the
// fingerprints an Aster from before occurrence-aware fingerprints gave them, to stand for
// reviews posted before an upgrade.
type legacyReviewer struct {
	inner Reviewer
	old   atomic.Bool
}

func (l *legacyReviewer) Review(ctx context.Context, in ReviewInput) (*review.Report, error) {
	rep, err := l.inner.Review(ctx, in)
	if err == nil && l.old.Load() {
		for i, f := range rep.Findings {
			rep.Findings[i].Fingerprint = finding.LegacyFingerprint(finding.Finding{Analyzer: f.Analyzer, RuleID: f.RuleID, Path: f.Path, Message: f.Message})
		}
	}
	return rep, err
}

// cdLines is n lines that each draw ShellCheck's SC2164 warning, all with one message.
func cdLines(n int, dir func(i int) string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "cd %s\n", dir(i))
	}
	return b.String()
}

var bodyLoc = regexp.MustCompile("`run\\.sh:([0-9]+)`")

// said lists, per line of run.sh, where a review said something: inline comments and the
// lines listed in review bodies.
func said(h *harness, number int, review int) (inline, body map[int]int) {
	inline, body = map[int]int{}, map[int]int{}
	r := h.fake.Reviews(h.owner, h.repo, number)[review]
	for _, c := range r.Comments {
		if c.Path == "run.sh" && strings.Contains(c.Body, "SC2164") {
			inline[c.Line]++
		}
	}
	for _, m := range bodyLoc.FindAllStringSubmatch(r.Body, -1) {
		n, _ := strconv.Atoi(m[1])
		body[n]++
	}
	return inline, body
}

// TestNoFindingLost runs real ShellCheck in the sandbox over a pull request whose one file
// draws 55 warnings of one rule with one message (50 different lines, 5 identical ones):
//   - first review: every warning is inline (30, the cap) or listed in the review body (25),
//     none is called "already posted";
//   - a push adding two more instances of the rule (one identical to older lines): two new
//     comments, inline on the new lines, and nothing of the first review repeated;
//   - a push that only inserts blank lines above everything: nothing new, no review;
//   - an upgrade: a review posted with the legacy fingerprints (1 of 3 repeats posted, 2
//     lost), then a full re-review with the new ones: the posted one is not posted again,
//     the two lost ones are.
func TestNoFindingLost(t *testing.T) {
	runner := dockerGate(t, 2)
	rv := &legacyReviewer{inner: NewPipelineReviewer(PipelineOptions{Gate: runner, TempDir: t.TempDir()})}
	h := newHarness(t, harnessOptions{reviewer: rv})

	base := h.git.Commit("", "base", map[string]string{".aster.yml": shellOnly, "README.md": "# widgets\n"})
	script := "#!/bin/sh\n" + cdLines(50, func(i int) string { return fmt.Sprintf("/tmp/d%d", i) }) + cdLines(5, func(int) string { return `"$HOME"` })
	head1 := h.git.Commit(base, "script", map[string]string{"run.sh": script})
	h.push("lost-1", "opened", 21, base, head1, "")
	recs := h.waitHistory(21, 1, 3*time.Minute)
	if r := recs[0]; r.Outcome != store.OutcomePosted || r.InlineComments != 30 {
		t.Fatalf("first review: %+v", r)
	}
	inline, body := said(h, 21, 0)
	for n := 2; n <= 56; n++ {
		if inline[n]+body[n] != 1 {
			t.Errorf("line %d: %d inline, %d in the body; want exactly one of them", n, inline[n], body[n])
		}
	}
	if len(inline) != 30 || len(body) != 25 {
		t.Errorf("%d inline, %d in the body; want 30 and 25", len(inline), len(body))
	}
	sum := h.fake.IssueComments(h.owner, h.repo, 21)[0].Body
	if !strings.Contains(sum, "30 new inline, 25 folded, 0 already posted") {
		t.Errorf("summary does not account for all 55:\n%s", sum)
	}

	// A push: two more instances of the rule, one a copy of an older line.
	script2 := script + "cd /opt/new\ncd \"$HOME\"\n"
	head2 := h.git.Commit(head1, "more", map[string]string{"run.sh": script2})
	h.openPR(21, base, head2)
	h.deliver("pull_request", "lost-2", h.prEvent("synchronize", 21, head2, base, head1))
	recs = h.waitHistory(21, 2, 3*time.Minute)
	if r := recs[1]; r.Outcome != store.OutcomePosted || r.InlineComments != 2 {
		t.Fatalf("second review: %+v", r)
	}
	inline, body = said(h, 21, 1)
	if inline[57] != 1 || inline[58] != 1 || len(inline) != 2 || len(body) != 0 {
		t.Errorf("second review: inline %v, body %v; want one comment on each of lines 57 and 58", inline, body)
	}
	assertNoRepeatsOn(t, h, 21)

	// A push that only moves lines: nothing to say.
	head3 := h.git.Commit(head2, "spacing", map[string]string{"run.sh": "#!/bin/sh\n\n\n\n" + strings.TrimPrefix(script2, "#!/bin/sh\n")})
	h.openPR(21, base, head3)
	h.deliver("pull_request", "lost-3", h.prEvent("synchronize", 21, head3, base, head2))
	recs = h.waitHistory(21, 3, 3*time.Minute)
	if r := recs[2]; r.Outcome != store.OutcomeNothingNew || r.InlineComments != 0 {
		t.Errorf("moved lines: %+v", r)
	}
	if n := len(h.fake.Reviews(h.owner, h.repo, 21)); n != 2 {
		t.Errorf("moved lines posted a review (%d reviews)", n)
	}

	// The upgrade: a review from before it, then a full re-review.
	rv.old.Store(true)
	old := "#!/bin/sh\n" + cdLines(3, func(int) string { return `"$HOME"` })
	head4 := h.git.Commit(base, "repeats", map[string]string{"run.sh": old})
	h.openPR(22, base, head4)
	h.deliver("pull_request", "lost-4", h.prEvent("opened", 22, head4, base, ""))
	recs = h.waitHistory(22, 1, 3*time.Minute)
	if r := recs[0]; r.Outcome != store.OutcomePosted || r.InlineComments != 1 {
		t.Fatalf("legacy review: %+v (the old scheme posted one of three)", r)
	}
	rv.old.Store(false)
	h.fake.SetPermission(h.owner, h.repo, "maintainer", "maintain")
	h.deliver("issue_comment", "lost-5", h.commentEvent(22, "maintainer", "/aster review"))
	recs = h.waitHistory(22, 2, 3*time.Minute)
	if r := recs[1]; r.Outcome != store.OutcomePosted || r.InlineComments != 2 {
		t.Fatalf("re-review after the upgrade: %+v", r)
	}
	reviews := h.fake.Reviews(h.owner, h.repo, 22)
	first := reviews[0].Comments[0].Line
	inline, body = said(h, 22, 1)
	if inline[first] != 0 || len(inline) != 2 || len(body) != 0 {
		t.Errorf("re-review: inline %v, body %v; line %d was posted before the upgrade", inline, body, first)
	}
	for _, c := range reviews[1].Comments {
		if fps := publish.Markers(c.Body); len(fps) != 1 {
			t.Errorf("comment without one marker: %q", c.Body)
		}
	}
}

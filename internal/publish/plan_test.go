package publish

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
)

// TestLegacyMarkerAfterAnUpgradeIncremental: a pull request reviewed before the upgrade
// carries the legacy marker of a rule's first instance; after the upgrade a push adds a
// second instance of the same rule and message in the same file. The new one is posted
// inline; the old one (on an old line of the hunks) is covered by the legacy marker and
// not posted again, not even in the body.
func TestLegacyMarkerAfterAnUpgradeIncremental(t *testing.T) {
	full := "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -0,0 +1,6 @@\n+import subprocess\n+subprocess.call(a, shell=True)\n+\n+\n+\n+subprocess.call(b, shell=True)\n"
	incr := "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -2,0 +3,4 @@\n+\n+\n+\n+subprocess.call(b, shell=True)\n"
	sc := scopeOf(t, full, &incr)
	mk := func(line int, text string) gate.Marked {
		f := finding.Finding{Analyzer: "bandit", RuleID: "B602", Path: "app.py", StartLine: line, EndLine: line, Message: "shell=True"}
		fs := []finding.Finding{f}
		finding.AssignFingerprints(fs, func(string, int) (string, bool) { return text, true })
		fs[0].Severity = finding.Error
		return gate.Marked{Finding: fs[0], Reported: true}
	}
	out := &review.Report{Findings: []gate.Marked{mk(2, "subprocess.call(a, shell=True)"), mk(6, "subprocess.call(b, shell=True)")}}
	pl := Build(out, sc, nil)
	legacy := finding.Fingerprint("finding", finding.LegacyFingerprint(finding.Finding{Analyzer: "bandit", RuleID: "B602", Path: "app.py", Message: "shell=True"}))
	rp := PlanReview(PlanOptions{Comments: pl.Comments, Posted: map[string]bool{legacy: true}})
	if len(rp.Inline) != 1 || rp.Inline[0].Line != 6 || len(rp.Folded) != 0 || len(rp.Skipped) != 1 || rp.Skipped[0].Line != 2 {
		t.Fatalf("inline %+v, folded %+v, skipped %+v: want line 6 inline and line 2 covered by the legacy marker", rp.Inline, rp.Folded, rp.Skipped)
	}
	// Without any marker (a pull request first reviewed after the upgrade) the old line is
	// listed in the body and the new one is inline: nothing new goes unsaid.
	rp = PlanReview(PlanOptions{Comments: pl.Comments})
	if len(rp.Inline) != 1 || len(rp.Folded) != 1 || rp.Folded[0].Line != 2 {
		t.Fatalf("no markers: inline %+v, folded %+v", rp.Inline, rp.Folded)
	}
}

// scopeOf parses the pull request's diff and, when incr is not nil, the incremental one.
func scopeOf(t *testing.T, full string, incr *string) Scope {
	t.Helper()
	files, _, err := review.ParseDiff(strings.NewReader(full), diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var inc []*diff.File
	if incr != nil {
		if inc, _, err = review.ParseDiff(strings.NewReader(*incr), diff.Options{}); err != nil {
			t.Fatal(err)
		}
		if inc == nil {
			inc = []*diff.File{}
		}
	}
	return NewScope(files, inc)
}

// TestPlanScope: inline comments go on lines of the hunks that the new commits touched;
// the rest are listed in the body or, for model comments, dropped.
func TestPlanScope(t *testing.T) {
	full := "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,3 +1,6 @@\n x\n+one\n+two\n y\n+three\n z\n@@ -20,2 +23,3 @@\n p\n+four\n q\n"
	incr := "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -22,2 +23,3 @@\n p\n+four\n q\n"
	sc := scopeOf(t, full, &incr)
	mark := func(line int, sev finding.Severity, rule, msg string, reported bool) gate.Marked {
		return gate.Marked{Finding: finding.Finding{Path: "a.go", StartLine: line, Severity: sev, Analyzer: "x", RuleID: rule, Message: msg}, Reported: reported}
	}
	out := &review.Report{
		Findings: []gate.Marked{
			mark(2, finding.Error, "r1", "old line", true),
			mark(24, finding.Warning, "r2", "new line", true),
			mark(24, finding.Note, "r3", "a note", true),
			mark(50, finding.Error, "r4", "outside", false),
		},
		Model: review.ModelReport{Comments: []review.Comment{
			{Path: "a.go", Line: 24, Body: "new"},
			{Path: "a.go", Line: 3, Body: "old"},
			{Path: "b.go", Line: 1, Body: "not in the diff"},
			{Path: "a.go", Line: 23, EndLine: 25, Body: "span"},
		}},
	}
	p := Build(out, sc, nil)
	if len(p.Annotations) != 3 {
		t.Errorf("annotations: %d, want the 3 reported findings", len(p.Annotations))
	}
	var got []string
	var inline []Comment
	for _, c := range p.Comments {
		got = append(got, strings.SplitN(c.Body, "\n", 2)[0])
		if c.BodyOnly {
			// The finding on an old line is listed in the body, where the marker
			// of the review that first posted it keeps it from being said twice.
			if c.Line != 2 || !strings.Contains(c.Body, "old line") {
				t.Errorf("body-only comment %s:%d %q", c.Path, c.Line, c.Body)
			}
			continue
		}
		inline = append(inline, c)
		if c.Line != 24 && c.Line != 25 {
			t.Errorf("comment on %s:%d, outside the new commits' lines", c.Path, c.Line)
		}
	}
	if len(p.Comments) != 4 || len(inline) != 3 || p.Unanchored != 2 {
		t.Fatalf("comments %q, unanchored %d: want the warning finding, two model comments, the old-line finding for the body, 2 dropped", got, p.Unanchored)
	}
	if last := inline[2]; last.StartLine != 23 || last.Line != 25 {
		t.Errorf("multi-line comment: %d-%d, want 23-25", last.StartLine, last.Line)
	}
	// A full review anchors everything inside the hunks.
	sc = scopeOf(t, full, nil)
	if p := Build(out, sc, nil); len(p.Comments) != 5 || p.Unanchored != 1 {
		t.Fatalf("full review: %d comments, %d unanchored", len(p.Comments), p.Unanchored)
	}
}

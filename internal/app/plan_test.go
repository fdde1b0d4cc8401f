package app

import (
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/github"
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
	sc, err := newScope([]byte(full), []byte(incr), true)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(line int, text string) gate.Marked {
		f := finding.Finding{Analyzer: "bandit", RuleID: "B602", Path: "app.py", StartLine: line, EndLine: line, Message: "shell=True"}
		fs := []finding.Finding{f}
		finding.AssignFingerprints(fs, func(string, int) (string, bool) { return text, true })
		fs[0].Severity = finding.Error
		return gate.Marked{Finding: fs[0], Reported: true}
	}
	out := &review.Report{Findings: []gate.Marked{mk(2, "subprocess.call(a, shell=True)"), mk(6, "subprocess.call(b, shell=True)")}}
	pl := buildPlan(out, sc, nil)
	legacy := finding.Fingerprint("finding", finding.LegacyFingerprint(finding.Finding{Analyzer: "bandit", RuleID: "B602", Path: "app.py", Message: "shell=True"}))
	rp := github.PlanReview(github.PlanOptions{Comments: pl.comments, Posted: map[string]bool{legacy: true}})
	if len(rp.Inline) != 1 || rp.Inline[0].Line != 6 || len(rp.Folded) != 0 || len(rp.Skipped) != 1 || rp.Skipped[0].Line != 2 {
		t.Fatalf("inline %+v, folded %+v, skipped %+v: want line 6 inline and line 2 covered by the legacy marker", rp.Inline, rp.Folded, rp.Skipped)
	}
	// Without any marker (a pull request first reviewed after the upgrade) the old line is
	// listed in the body and the new one is inline: nothing new goes unsaid.
	rp = github.PlanReview(github.PlanOptions{Comments: pl.comments})
	if len(rp.Inline) != 1 || len(rp.Folded) != 1 || rp.Folded[0].Line != 2 {
		t.Fatalf("no markers: inline %+v, folded %+v", rp.Inline, rp.Folded)
	}
}

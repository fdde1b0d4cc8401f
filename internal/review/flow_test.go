package review

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/safetext/safetexttest"
)

func flowFinding() gate.Marked {
	return gate.Marked{Reported: true, Finding: finding.Finding{
		Analyzer: "taint-python", RuleID: "aster.taint.sql-injection", Severity: finding.Error,
		Path: "app/dao.py", StartLine: 18, EndLine: 18, CWE: []string{"CWE-89"},
		Message: "request.args['q'] reaches cursor.execute (SQL injection)",
		Flow: []finding.FlowStep{
			{Path: "app/views.py", Line: 12, Text: "request.args['q']"},
			{Path: "app/dao.py", Line: 15, Text: "query"},
			{Path: "app/dao.py", Line: 18, Text: "cursor.execute"},
		},
	}}
}

// TestFlowRendering: the Markdown report shows a finding's flow from source
// to sink, naming the file of a step in another file than the finding's.
func TestFlowRendering(t *testing.T) {
	m := flowFinding()
	want := "`request.args['q']` (app/views.py line 12) → `query` (line 15) → `cursor.execute` (line 18)"
	var b strings.Builder
	rep := &Report{Findings: []gate.Marked{m}, Summary: gate.Summarize([]gate.Marked{m}), Files: FilesInfo{Changed: 1}}
	if err := WriteMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  flow: "+want+"\n") {
		t.Errorf("markdown has no flow line:\n%s", b.String())
	}
}

// TestRedactFindingFlow: a secret in a flow step (code can hold one) is
// redacted like the message, without changing the original finding.
func TestRedactFindingFlow(t *testing.T) {
	secret := safetexttest.FakeSecret("sk-live-aster-", 32)
	m := flowFinding()
	m.Flow[1].Text = "key = '" + secret + "'"
	r := RedactFinding(m, safetext.NewRedactor([]string{secret}))
	if strings.Contains(r.Flow[1].Text, secret) {
		t.Errorf("flow not redacted: %q", r.Flow[1].Text)
	}
	if !strings.Contains(m.Flow[1].Text, secret) {
		t.Error("the original finding was changed")
	}
}

// TestAnalyzerNotes: an analyzer's row says how many findings it left to the
// taint engine, names the files an engine left out (at most five), and counts what the
// findings cap dropped and what the source suppressed.
func TestAnalyzerNotes(t *testing.T) {
	a := gate.AnalyzerResult{Superseded: 3}
	for i := 0; i < 7; i++ {
		a.Notices = append(a.Notices, finding.Notice{Path: "f.py", Text: "taint: f.py skipped: over the per-file budget (5000 ms)"})
	}
	got := analyzerNotes(a)
	if !strings.HasPrefix(got, "3 findings of rules without data flow left to taint-python. taint: f.py skipped: over the per-file budget (5000 ms).") ||
		strings.Count(got, "skipped") != 5 || !strings.HasSuffix(got, "… and 2 more files not analysed.") {
		t.Errorf("notes %q", got)
	}
	if analyzerNotes(gate.AnalyzerResult{}) != "" {
		t.Error("notes for an analyzer with nothing to say")
	}
	// Bandit over a large change: what the cap dropped and what the source suppressed.
	got = analyzerNotes(gate.AnalyzerResult{Dropped: 40653, Suppressed: 1})
	if want := "40653 more findings past the cap of 5000 dropped, the least severe first. 1 finding suppressed in the source."; got != want {
		t.Errorf("notes %q, want %q", got, want)
	}
}

package publish

import (
	"fmt"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/testrun"
)

// TestInstallPhase: the summary comment and the check run say what the install phase did,
// escaped and redacted as everything else from the repository.
func TestInstallPhase(t *testing.T) {
	rep := &review.Report{Files: review.FilesInfo{Changed: 1}, Tests: &review.TestsReport{Status: review.TestsError, Command: []string{"npm", "test"},
		Reason: "the install phase failed, the tests did not run", Summary: testrun.Summary{Failures: []testrun.Failure{}},
		Install: &api.InstallResult{Status: api.InstallFailed, Kind: "npm", Command: []string{"npm", "ci"}, DurationMS: 3100,
			Reason: "the install command exited with code 1", Cache: api.CacheMiss,
			ErrorLines: []string{"npm ERR! <img src=x> 404 `left-pad` token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"},
			Downloads:  api.Downloads{Hosts: []string{"registry.example"}, Bytes: 4096, Connections: 1, Refused: 2}}}}
	rep.Summary = gate.Summarize(nil)
	rep = review.RedactReport(rep, safetext.NewRedactor(nil))
	body := Summary(rep, SummaryOptions{Head: "0123456789abcdef"})
	for _, want := range []string{"| Dependencies | install npm failed in 3.1s, 4KiB from registry", "2 connections refused, cache miss: the install command exited with code 1 |"} {
		if !strings.Contains(body, want) {
			t.Errorf("summary lacks %q:\n%s", want, body)
		}
	}
	_, _, text := CheckOutput(rep, "0123456789abcdef", "")
	if !strings.Contains(text, "Dependencies: install npm failed") || !strings.Contains(text, "First error lines of the install:") {
		t.Errorf("check run text:\n%s", text)
	}
	if !strings.Contains(text, `\<img`) || strings.Contains(text, " <img") || strings.Contains(text, "ghp_0123456789") {
		t.Errorf("the install's output reached the check run unescaped or unredacted:\n%s", text)
	}
}

// TestFlowComment: the inline comment shows a finding's flow from source to
// sink, and a step's text (code from the repository) stays inert.
func TestFlowComment(t *testing.T) {
	m := gate.Marked{Reported: true, Finding: finding.Finding{
		Analyzer: "taint-python", RuleID: "aster.taint.sql-injection", Severity: finding.Error,
		Path: "app/dao.py", StartLine: 18, EndLine: 18,
		Message: "request.args['q'] reaches cursor.execute (SQL injection)",
		Flow: []finding.FlowStep{
			{Path: "app/views.py", Line: 12, Text: "request.args['q']"},
			{Path: "app/dao.py", Line: 15, Text: "query"},
			{Path: "app/dao.py", Line: 18, Text: "cursor.execute"},
		},
	}}
	c := FindingComment(m)
	if !strings.Contains(c, "Flow: `request.args['q']` (app/views.py line 12) → `query` (line 15) → `cursor.execute` (line 18)") {
		t.Errorf("comment:\n%s", c)
	}
	// A step's text is code from the repository: it stays inert in a comment.
	m.Flow[1].Text = "x` @team [link](https://evil.example)"
	if c := FindingComment(m); !strings.Contains(c, "→ ``x` @team [link](https://evil.example)`` (line 15) →") {
		t.Errorf("step text not in a code span:\n%s", c)
	}
}

// TestSummaryListCapped: the summary lists the reported findings most severe
// first up to its cap, then says how many more there are; findings not
// reported are neither listed nor counted.
func TestSummaryListCapped(t *testing.T) {
	rep := &review.Report{}
	n := maxSummaryFindings + 3
	for i := range n {
		sev := finding.Note
		if i%10 == 9 {
			sev = finding.Error
		}
		rep.Findings = append(rep.Findings, gate.Marked{Reported: true, Finding: finding.Finding{
			Analyzer: "a", RuleID: "r", Severity: sev, Path: "f.go", StartLine: i + 1, Message: fmt.Sprintf("m%d", i)}})
	}
	rep.Findings = append(rep.Findings, gate.Marked{Finding: finding.Finding{Analyzer: "a", RuleID: "r", Severity: finding.Error, Path: "f.go", StartLine: 1, Message: "unreported"}})
	rep.Files.Changed, rep.Summary = 1, gate.Summarize(rep.Findings)
	text := Summary(rep, SummaryOptions{Head: "abc"})
	var listed []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "- **") {
			listed = append(listed, l)
		}
	}
	if len(listed) != maxSummaryFindings {
		t.Fatalf("%d findings listed, want %d", len(listed), maxSummaryFindings)
	}
	// The errors (every tenth) come first, then the notes in file order.
	if !strings.Contains(listed[0], "m9") || !strings.Contains(listed[4], "m49") || !strings.Contains(listed[5], "m0") {
		t.Errorf("not most severe first: %q, %q, %q", listed[0], listed[4], listed[5])
	}
	if more := fmt.Sprintf("- …and %d more (see the check run's annotations)\n", n-maxSummaryFindings); !strings.Contains(text, listed[len(listed)-1]+"\n"+more) {
		t.Errorf("the list does not end with %q", more)
	}
	if strings.Contains(text, "unreported") {
		t.Error("lists a finding that is not reported")
	}
}

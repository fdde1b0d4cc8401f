package review

import (
	"context"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
)

func lcFinding(analyzer, rule, path string, line int, sev finding.Severity, fp string) gate.Marked {
	return gate.Marked{Reported: true, Finding: finding.Finding{Analyzer: analyzer, RuleID: rule, Path: path,
		StartLine: line, Severity: sev, Message: rule + " here", Fingerprint: fp}}
}

func lcReport(head string, analyzers map[string]gate.Status, fs ...gate.Marked) *Report {
	r := &Report{Version: ReportVersion, Head: Revision{SHA: head}, Findings: fs}
	for name, st := range analyzers {
		r.Analyzers = append(r.Analyzers, gate.AnalyzerResult{Name: name, Status: st})
	}
	return r
}

func fingerprints(es []LifecycleEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Fingerprint)
	}
	return out
}

// evidenceRechecker stands for the evidence runner: it re-checks only the comments it
// knows evidence for.
type evidenceRechecker map[string]bool // fingerprint → still failing

func (r evidenceRechecker) Recheck(_ context.Context, c Comment) (Recheck, error) {
	still, ok := r[c.Fingerprint]
	return Recheck{Applies: ok, Still: still, CheckedBy: "python3 -m pytest -q t.py"}, nil
}

// TestClassifyLifecycle: over three pushes, a fixed finding is resolved by re-running its
// analyzer, one still reported is carried (its line moved), one whose analyzer failed is
// kept open as not re-checked, a deleted file's finding is resolved, notes and findings
// outside the change never count, and what is carried stays open on the next push too.
func TestClassifyLifecycle(t *testing.T) {
	ok := map[string]gate.Status{"bandit": gate.StatusOK, "shellcheck": gate.StatusOK, "gitleaks": gate.StatusOK, "semgrep": gate.StatusOK}
	unreported := lcFinding("bandit", "B101", "a.py", 3, finding.Error, "v2:outside")
	unreported.Reported = false
	prev := lcReport("1111111aaaa", ok,
		lcFinding("bandit", "B602", "a.py", 10, finding.Error, "v2:fixed"),
		lcFinding("shellcheck", "SC2086", "run.sh", 4, finding.Warning, "v2:kept"),
		lcFinding("gitleaks", "generic-api-key", "old.env", 1, finding.Error, "v2:deleted"),
		lcFinding("semgrep", "r", "b.go", 2, finding.Warning, "v2:unchecked"),
		lcFinding("bandit", "B311", "a.py", 20, finding.Note, "v2:note"),
		unreported)
	prev.Model.Comments = []Comment{{Path: "a.py", Line: 12, Severity: finding.Warning, Body: "off by one", Fingerprint: "m-evidence"},
		{Path: "a.py", Line: 14, Severity: finding.Warning, Body: "an opinion", Fingerprint: "m-opinion"}}
	curStatus := map[string]gate.Status{"bandit": gate.StatusOK, "shellcheck": gate.StatusOK, "gitleaks": gate.StatusOK, "semgrep": gate.StatusFailed}
	cur := lcReport("2222222bbbb", curStatus,
		lcFinding("shellcheck", "SC2086", "run.sh", 9, finding.Warning, "v2:kept"),
		lcFinding("bandit", "B608", "a.py", 30, finding.Error, "v2:new"))
	cur.Files.Omitted = []OmittedFile{{Path: "old.env", Reason: ReasonDeleted}}

	lc, err := ClassifyLifecycle(t.Context(), prev, cur, LifecycleOptions{Rechecker: evidenceRechecker{"m-evidence": false}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fingerprints(lc.Resolved), " "); got != "v2:fixed v2:deleted m-evidence" {
		t.Errorf("resolved %q", got)
	}
	if got := strings.Join(fingerprints(lc.StillOpen), " "); got != "v2:kept v2:unchecked" {
		t.Errorf("still open %q", got)
	}
	if got := strings.Join(fingerprints(lc.New), " "); got != "v2:new" {
		t.Errorf("new %q", got)
	}
	fixed := lc.Resolved[0]
	if fixed.CheckedBy != "re-ran bandit B602 on this file: no longer reported" || fixed.Head != cur.Head.SHA || fixed.Path != "a.py" || fixed.Line != 10 {
		t.Errorf("resolved entry %+v", fixed)
	}
	if lc.Resolved[2].CheckedBy != "python3 -m pytest -q t.py" || lc.Resolved[2].Kind != KindComment {
		t.Errorf("model comment re-checked by its evidence: %+v", lc.Resolved[2])
	}
	if kept := lc.StillOpen[0]; kept.Line != 9 || kept.Since != prev.Head.SHA || kept.CheckedBy != "" {
		t.Errorf("still-open entry %+v: want the current line and the head it was raised on", kept)
	}
	if !strings.Contains(lc.StillOpen[1].CheckedBy, "semgrep did not finish") {
		t.Errorf("unchecked entry %+v", lc.StillOpen[1])
	}
	if lc.Previous != prev.Head.SHA {
		t.Errorf("previous %q", lc.Previous)
	}

	// Push 3 adds nothing and fixes nothing: what was open stays open, with the head it was
	// first raised on, and nothing is new.
	cur.Lifecycle = lc
	third := lcReport("3333333cccc", ok,
		lcFinding("shellcheck", "SC2086", "run.sh", 9, finding.Warning, "v2:kept"),
		lcFinding("bandit", "B608", "a.py", 30, finding.Error, "v2:new"),
		lcFinding("semgrep", "r", "b.go", 2, finding.Warning, "v2:unchecked"))
	lc3, err := ClassifyLifecycle(t.Context(), cur, third, LifecycleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lc3.New) != 0 || len(lc3.Resolved) != 0 || len(lc3.StillOpen) != 3 {
		t.Fatalf("third push: resolved %v, still open %v, new %v", fingerprints(lc3.Resolved), fingerprints(lc3.StillOpen), fingerprints(lc3.New))
	}
	if lc3.StillOpen[0].Since != prev.Head.SHA {
		t.Errorf("carried entry lost where it was raised: %+v", lc3.StillOpen[0])
	}
}

// TestReadReport: a report read back must be this Aster's JSON, under the cap.
func TestReadReport(t *testing.T) {
	var b strings.Builder
	rep := lcReport("abc", nil, lcFinding("bandit", "B602", "a.py", 1, finding.Error, "v2:x"))
	if err := WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReport(strings.NewReader(b.String()))
	if err != nil || len(got.Findings) != 1 || got.Findings[0].Fingerprint != "v2:x" {
		t.Fatalf("read back: %v, %+v", err, got)
	}
	for name, in := range map[string]string{"not json": "{", "other version": `{"version": 99}`, "no findings": `{"version": 1}`} {
		if _, err := ReadReport(strings.NewReader(in)); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}

// TestDismissedNeitherOpenNorFailing: a dismissed finding leaves the reported findings, the
// check's failure and the lifecycle's open list; a dismissed model comment is dropped with
// who dismissed it.
func TestDismissedNeitherOpenNorFailing(t *testing.T) {
	ok := map[string]gate.Status{"bandit": gate.StatusOK}
	prev := lcReport("1111111", ok, lcFinding("bandit", "B602", "a.py", 10, finding.Error, "v2:x"))
	cur := lcReport("2222222", ok, lcFinding("bandit", "B602", "a.py", 10, finding.Error, "v2:x"))
	cur.FailOn, cur.Conclusion = "error", Failure
	cur.Model.Comments = []Comment{{Path: "a.py", Line: 3, Body: "hm", Fingerprint: "m"}}
	ApplyDismissals(cur, Dismissed{Findings: map[int]string{0: "octocat"}, Comments: map[int]string{0: "hubot"}})
	if cur.Findings[0].Reported || cur.Findings[0].DismissedBy != "octocat" || cur.Summary.Dismissed != 1 || cur.Summary.Reported != 0 {
		t.Fatalf("finding %+v, summary %+v", cur.Findings[0], cur.Summary)
	}
	if cur.Conclusion != Success {
		t.Errorf("conclusion %s: a dismissed error still fails", cur.Conclusion)
	}
	if len(cur.Model.Comments) != 0 || len(cur.Model.DroppedComments) != 1 || !strings.Contains(cur.Model.DroppedComments[0].Reason, "hubot") {
		t.Errorf("model comments %+v, dropped %+v", cur.Model.Comments, cur.Model.DroppedComments)
	}
	lc, err := ClassifyLifecycle(t.Context(), prev, cur, LifecycleOptions{})
	if err != nil || len(lc.StillOpen)+len(lc.Resolved)+len(lc.New) != 0 {
		t.Errorf("lifecycle of a dismissed finding: %+v, %v", lc, err)
	}
}

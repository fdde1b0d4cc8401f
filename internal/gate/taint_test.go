package gate

import (
	"testing"

	"github.com/asterhq/aster/internal/finding"
)

// TestSupersedeBandit: where taint-python ran ok, Bandit's findings of rules
// without data flow (B608, B603, ...) are taken out and counted, except in a
// file the engine left out; Bandit's other rules stay; without an ok taint
// run nothing is taken.
func TestSupersedeBandit(t *testing.T) {
	fs := func() []finding.Finding {
		return []finding.Finding{
			{Analyzer: "bandit", RuleID: "B608", Path: "app.py", StartLine: 3},
			{Analyzer: "bandit", RuleID: "B603", Path: "app.py", StartLine: 9},
			{Analyzer: "bandit", RuleID: "B324", Path: "app.py", StartLine: 12},
			{Analyzer: "bandit", RuleID: "B301", Path: "app.py", StartLine: 14},
			{Analyzer: "bandit", RuleID: "B608", Path: "huge.py", StartLine: 1},
			{Analyzer: "ast-grep", RuleID: "B608", Path: "app.py", StartLine: 3},
		}
	}
	results := []AnalyzerResult{
		{Name: TaintPython, Status: StatusOK, Notices: []finding.Notice{{Path: "huge.py", Text: "taint: huge.py skipped"}}},
		{Name: "bandit", Status: StatusOK, Findings: 5},
	}
	kept, taken := supersede(results, fs())
	if len(taken) != 2 || taken[0].RuleID != "B608" || taken[1].RuleID != "B603" {
		t.Errorf("taken %+v", taken)
	}
	if len(kept) != 4 {
		t.Errorf("kept %+v", kept)
	}
	if results[1].Superseded != 2 || results[1].Findings != 3 {
		t.Errorf("bandit result %+v", results[1])
	}
	for _, st := range []Status{StatusFailed, StatusTimeout, StatusSkipped} {
		results := []AnalyzerResult{{Name: TaintPython, Status: st}, {Name: "bandit", Status: StatusOK, Findings: 5}}
		kept, taken := supersede(results, fs())
		if len(kept) != 6 || len(taken) != 0 || results[1].Superseded != 0 {
			t.Errorf("taint %s: kept %d, taken %d", st, len(kept), len(taken))
		}
	}
}

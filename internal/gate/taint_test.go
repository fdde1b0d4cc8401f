package gate

import (
	"slices"
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

// TestSupersedeJS: where taint-js ran ok, ESLint's and ast-grep's findings
// of rules without data flow in the categories it follows (a non-literal
// fs file name, eval, aster.js.sql-injection) are taken out and counted, in
// the files it was given only (not an unchanged file ast-grep scanned, not a
// file it left out); their other rules stay; without an ok run nothing is
// taken.
func TestSupersedeJS(t *testing.T) {
	fs := func() []finding.Finding {
		return []finding.Finding{
			{Analyzer: "eslint", RuleID: "security/detect-non-literal-fs-filename", Path: "app.js", StartLine: 3},
			{Analyzer: "eslint", RuleID: "no-eval", Path: "app.js", StartLine: 5},
			{Analyzer: "eslint", RuleID: "security/detect-unsafe-regex", Path: "app.js", StartLine: 7},
			{Analyzer: "ast-grep", RuleID: "aster.js.sql-injection", Path: "app.js", StartLine: 9},
			{Analyzer: "ast-grep", RuleID: "aster.js.weak-crypto", Path: "app.js", StartLine: 11},
			{Analyzer: "ast-grep", RuleID: "aster.js.sql-injection", Path: "old.js", StartLine: 2},
			{Analyzer: "ast-grep", RuleID: "aster.js.sql-injection", Path: "huge.js", StartLine: 1},
			{Analyzer: "taint-js", RuleID: "aster.taint.sql-injection", Path: "app.js", StartLine: 9},
		}
	}
	a, _ := Lookup(Builtins(), TaintJS)
	changed := map[string]bool{"app.js": true, "huge.js": true}
	results := []AnalyzerResult{
		{Name: TaintJS, Status: StatusOK, Findings: 1, Notices: []finding.Notice{{Path: "huge.js", Text: "taint: huge.js skipped"}}},
		{Name: "eslint", Status: StatusOK, Findings: 3},
		{Name: "ast-grep", Status: StatusOK, Findings: 4},
	}
	kept, taken := supersedeJS(results, fs(), taintJSTargets([]Analyzer{a}, changed))
	var got []string
	for _, f := range taken {
		got = append(got, f.Analyzer+" "+f.RuleID+" "+f.Path)
	}
	want := []string{"eslint security/detect-non-literal-fs-filename app.js", "eslint no-eval app.js", "ast-grep aster.js.sql-injection app.js"}
	if !slices.Equal(got, want) {
		t.Errorf("taken %q, want %q", got, want)
	}
	if len(kept) != 5 {
		t.Errorf("kept %+v", kept)
	}
	if results[1].Superseded != 2 || results[1].Findings != 1 || results[2].Superseded != 1 || results[2].Findings != 3 {
		t.Errorf("results %+v", results)
	}
	for _, st := range []Status{StatusFailed, StatusTimeout, StatusSkipped} {
		results := []AnalyzerResult{{Name: TaintJS, Status: st}, {Name: "eslint", Status: StatusOK, Findings: 3}}
		kept, taken := supersedeJS(results, fs(), taintJSTargets([]Analyzer{a}, changed))
		if len(kept) != 8 || len(taken) != 0 || results[1].Superseded != 0 {
			t.Errorf("taint %s: kept %d, taken %d", st, len(kept), len(taken))
		}
	}
	if kept, taken := supersedeJS(results, fs(), taintJSTargets(nil, changed)); len(kept) != 8 || len(taken) != 0 {
		t.Errorf("without taint-js among the analyzers: kept %d, taken %d", len(kept), len(taken))
	}
}

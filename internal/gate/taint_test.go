package gate

import (
	"slices"
	"strconv"
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
		{Name: TaintPython, Status: StatusOK, Notices: []finding.Notice{{Path: "huge.py", Text: "taint: huge.py skipped"}},
			Judged: finding.Judged{"app.py": {3: {"sql-injection": false}, 9: {"command-injection": false}, 14: {"insecure-deserialization": false}}}},
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
		results := []AnalyzerResult{{Name: TaintPython, Status: st, Judged: finding.Judged{"app.py": {3: {"sql-injection": false}}}},
			{Name: "bandit", Status: StatusOK, Findings: 5}}
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
		{Name: TaintJS, Status: StatusOK, Findings: 1, Notices: []finding.Notice{{Path: "huge.js", Text: "taint: huge.js skipped"}},
			Judged: finding.Judged{"app.js": {3: {"path-traversal": false}, 5: {"code-injection": false}, 9: {"sql-injection": false}}}},
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

// TestSupersedeOnlyJudged: a rule without data flow is superseded only where
// the taint engine judged a sink of its category on the finding's lines
// (reported it or found it safe). A finding where the engine never looked (a
// source it does not know, a sink in a function it did not reach) stays;
// Bandit's deserialization tests go only where the engine reported the call
// or judged it safe by its own arguments (a safe loader, a constant), not
// where it merely saw no source.
func TestSupersedeOnlyJudged(t *testing.T) {
	fs := []finding.Finding{
		{Analyzer: "bandit", RuleID: "B608", Path: "app.py", StartLine: 3},               // judged: taken
		{Analyzer: "bandit", RuleID: "B608", Path: "app.py", StartLine: 20},              // never judged: kept
		{Analyzer: "bandit", RuleID: "B608", Path: "app.py", StartLine: 24, EndLine: 26}, // judged on its last line: taken
		{Analyzer: "bandit", RuleID: "B603", Path: "app.py", StartLine: 3},               // judged, another category: kept
		{Analyzer: "bandit", RuleID: "B506", Path: "app.py", StartLine: 30},              // judged for want of a source only: kept
		{Analyzer: "bandit", RuleID: "B506", Path: "app.py", StartLine: 32},              // judged safe by its loader: taken
		{Analyzer: "bandit", RuleID: "B301", Path: "app.py", StartLine: 34},              // the engine reported it: taken
		{Analyzer: "bandit", RuleID: "B301", Path: "other.py", StartLine: 34},            // kept
		{Analyzer: "bandit", RuleID: "B602", Path: "app.py", StartLine: 50},              // not judged but reported by the engine: taken
		{Analyzer: TaintPython, RuleID: "aster.taint.command-injection", Path: "app.py", StartLine: 50},
		{Analyzer: "ast-grep", RuleID: "aster.python.sql-injection", Path: "app.py", StartLine: 3},   // judged: taken
		{Analyzer: "ast-grep", RuleID: "aster.python.sql-injection", Path: "app.py", StartLine: 20},  // never judged: kept
		{Analyzer: "ast-grep", RuleID: "aster.python.code-injection", Path: "app.py", StartLine: 40}, // the engine reported it: kept, merged
		{Analyzer: TaintPython, RuleID: "aster.taint.code-injection", Path: "app.py", StartLine: 40},
		{Analyzer: TaintPython, RuleID: "aster.taint.insecure-deserialization", Path: "app.py", StartLine: 34},
	}
	results := []AnalyzerResult{
		{Name: TaintPython, Status: StatusOK, Findings: 1, Judged: finding.Judged{"app.py": {
			3: {"sql-injection": false}, 26: {"sql-injection": false},
			30: {"insecure-deserialization": false}, 32: {"insecure-deserialization": true}, 34: {"insecure-deserialization": false},
			40: {"code-injection": false}}}},
		{Name: "bandit", Status: StatusOK, Findings: 8}, {Name: "ast-grep", Status: StatusOK, Findings: 2},
	}
	kept, taken := supersede(results, slices.Clone(fs))
	var got []string
	for _, f := range taken {
		got = append(got, f.Analyzer+":"+strconv.Itoa(f.StartLine))
	}
	if want := []string{"bandit:3", "bandit:24", "bandit:32", "bandit:34", "bandit:50", "ast-grep:3"}; !slices.Equal(got, want) {
		t.Errorf("taken %v, want %v", got, want)
	}
	if len(kept) != 9 || results[1].Superseded != 5 || results[2].Superseded != 1 {
		t.Errorf("kept %d, results %+v", len(kept), results)
	}

	js := []finding.Finding{
		{Analyzer: "ast-grep", RuleID: "aster.js.sql-injection", Path: "api.js", StartLine: 7},  // judged: taken
		{Analyzer: "ast-grep", RuleID: "aster.js.sql-injection", Path: "api.js", StartLine: 12}, // never judged: kept
		{Analyzer: "eslint", RuleID: "no-eval", Path: "api.js", StartLine: 7},                   // judged for SQL, not code: kept
	}
	jr := []AnalyzerResult{
		{Name: TaintJS, Status: StatusOK, Judged: finding.Judged{"api.js": {7: {"sql-injection": false}}}},
		{Name: "ast-grep", Status: StatusOK, Findings: 2}, {Name: "eslint", Status: StatusOK, Findings: 1},
	}
	a, _ := Lookup(Builtins(), TaintJS)
	kept, taken = supersedeJS(jr, slices.Clone(js), taintJSTargets([]Analyzer{a}, map[string]bool{"api.js": true}))
	if len(taken) != 1 || taken[0].StartLine != 7 || taken[0].Analyzer != "ast-grep" || len(kept) != 2 {
		t.Errorf("js: taken %+v, kept %+v", taken, kept)
	}
}

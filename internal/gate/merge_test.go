package gate

import (
	"maps"
	"slices"
	"testing"

	"github.com/asterhq/aster/internal/finding"
)

func TestMerge(t *testing.T) {
	f := func(analyzer, rule, path string, line int, sev finding.Severity) finding.Finding {
		return finding.Finding{Analyzer: analyzer, RuleID: rule, Path: path, StartLine: line, EndLine: line, Severity: sev, Message: rule}
	}
	fs := []finding.Finding{
		f("bandit", "B105", "a.py", 3, finding.Note), // same line as gitleaks' key
		f("gitleaks", "generic-api-key", "a.py", 3, finding.Error),
		f("bandit", "B602", "a.py", 3, finding.Error), // another problem on that line
		f("shellcheck", "SC2086", "b.sh", 1, finding.Note),
		f("shellcheck", "SC2086", "b.sh", 2, finding.Note),
		f("bandit", "B105", "a.py", 9, finding.Note), // another line: kept
		f("semgrep", "x", "c.py", 4, finding.Warning),
		{Analyzer: "semgrep", RuleID: "y", Path: "c.py", StartLine: 4, EndLine: 4, Severity: finding.Warning, Message: "CWE-78: os command"},
		{Analyzer: "astgrep", RuleID: "z", Path: "c.py", StartLine: 4, EndLine: 4, Severity: finding.Error, RuleName: "command injection (CWE-78)"},
		// the CWE field, not the text, says these two are one SQL injection
		{Analyzer: "bandit", RuleID: "B608", Path: "d.py", StartLine: 7, EndLine: 7, Severity: finding.Warning, Message: "sql", CWE: []string{"CWE-89"}},
		{Analyzer: "ast-grep", RuleID: "aster.python.sql-injection", Path: "d.py", StartLine: 7, EndLine: 7, Severity: finding.Error, Message: "query", CWE: []string{"CWE-89"}},
	}
	out := merge(fs, []string{"gitleaks", "shellcheck", "bandit", "astgrep", "ast-grep", "semgrep"})
	type k struct {
		analyzer, rule string
		line           int
	}
	var got []k
	for _, f := range out {
		got = append(got, k{f.Analyzer, f.RuleID, f.StartLine})
	}
	want := []k{{"bandit", "B602", 3}, {"gitleaks", "generic-api-key", 3}, {"astgrep", "z", 4}, {"ast-grep", "aster.python.sql-injection", 7},
		{"semgrep", "x", 4}, {"bandit", "B105", 9}, {"shellcheck", "SC2086", 1}, {"shellcheck", "SC2086", 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("merged to\n%v\nwant\n%v", got, want)
	}
	if !slices.Equal(out[1].Also, []string{"bandit/B105"}) || !slices.Equal(out[2].Also, []string{"semgrep/y"}) || out[0].Also != nil ||
		!slices.Equal(out[3].Also, []string{"bandit/B608"}) {
		t.Errorf("also: %v %v %v %v", out[0].Also, out[1].Also, out[2].Also, out[3].Also)
	}
}

// TestMergeKeepsFlow: when a taint engine's finding is merged into another
// analyzer's on the same line, the kept finding takes its flow.
func TestMergeKeepsFlow(t *testing.T) {
	flow := []finding.FlowStep{{Path: "a.py", Line: 3, Text: "request.args['q']"}, {Path: "a.py", Line: 5, Text: "os.system"}}
	fs := []finding.Finding{
		{Analyzer: "ast-grep", RuleID: "aster.python.command-injection", Severity: finding.Error, Path: "a.py", StartLine: 5, CWE: []string{"CWE-78"}},
		{Analyzer: TaintPython, RuleID: "aster.taint.command-injection", Severity: finding.Warning, Path: "a.py", StartLine: 5, CWE: []string{"CWE-78"}, Flow: flow},
	}
	out := merge(fs, []string{TaintPython, "ast-grep"})
	if len(out) != 1 || out[0].Analyzer != "ast-grep" || len(out[0].Flow) != 2 || out[0].Also[0] != TaintPython+"/aster.taint.command-injection" {
		t.Fatalf("merged %+v", out)
	}
}

// TestMergeCWEFamilies: two analyzers that give neighbouring CWEs to one
// problem on one line (327/328, 20/502, 78/88) report it once; CWEs of
// different families on one line stay two findings.
func TestMergeCWEFamilies(t *testing.T) {
	f := func(analyzer, rule string, line int, cwe string) finding.Finding {
		return finding.Finding{Analyzer: analyzer, RuleID: rule, Path: "a.py", StartLine: line, EndLine: line, Severity: finding.Warning, Message: rule, CWE: []string{cwe}}
	}
	fs := []finding.Finding{
		f("bandit", "B324", 1, "CWE-327"), f("ast-grep", "weak-hash", 1, "CWE-328"),
		f("bandit", "B506", 2, "CWE-20"), f("semgrep", "yaml-load", 2, "cwe-502"),
		f("ast-grep", "argv-injection", 3, "CWE-88"), f("semgrep", "os-command", 3, "CWE-78"),
		// different families on one line: both kept
		f("bandit", "B608", 4, "CWE-89"), f("ast-grep", "xss", 4, "CWE-79"),
		// a CWE in no family still merges with itself only
		f("bandit", "B999", 5, "CWE-1333"), f("ast-grep", "redos", 5, "CWE-1333"), f("semgrep", "other", 5, "CWE-1334"),
	}
	out := merge(fs, []string{"ast-grep", "bandit", "semgrep"})
	perLine := map[int]int{}
	for _, f := range out {
		perLine[f.StartLine]++
	}
	if want := map[int]int{1: 1, 2: 1, 3: 1, 4: 2, 5: 2}; !maps.Equal(perLine, want) {
		t.Fatalf("findings per line %v, want %v: %+v", perLine, want, out)
	}
	if got := cweFamily(" cwe-328"); got != cweFamily("CWE-327") {
		t.Errorf("CWE-328 in %q, CWE-327 in %q", got, cweFamily("CWE-327"))
	}
}

package gate

import (
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

package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
)

// TestSuiteLabels: every suite kept in the repository parses, and has both
// vulnerable and safe sites, so false positives are measurable.
func TestSuiteLabels(t *testing.T) {
	suites, err := LoadSuites(SuiteLabels())
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) == 0 {
		t.Fatal("no suite")
	}
	for _, s := range suites {
		var pos, neg int
		for _, st := range s.Sites {
			if st.Vulnerable {
				pos++
			} else {
				neg++
			}
		}
		if pos == 0 || neg == 0 {
			t.Errorf("%s: %d vulnerable, %d safe sites", s.Name, pos, neg)
		}
	}
}

// TestParseSuiteRefuses: a label file that is not what the scorer expects
// is refused with a message that names the site.
func TestParseSuiteRefuses(t *testing.T) {
	head := `{"name":"x","upstream":"u","commit":"c","licence":"MIT","sites":[`
	for name, body := range map[string]string{
		"unknown field":    head + `{"path":"a.py","line":1,"category":"xss","vulnerable":true,"why":"w","extra":1}]}`,
		"absolute path":    head + `{"path":"/a.py","line":1,"category":"xss","vulnerable":true,"why":"w"}]}`,
		"dot-dot path":     head + `{"path":"../a.py","line":1,"category":"xss","vulnerable":true,"why":"w"}]}`,
		"line 0":           head + `{"path":"a.py","line":0,"category":"xss","vulnerable":true,"why":"w"}]}`,
		"unknown category": head + `{"path":"a.py","line":1,"category":"nope","vulnerable":true,"why":"w"}]}`,
		"no why":           head + `{"path":"a.py","line":1,"category":"xss","vulnerable":true,"why":" "}]}`,
		"twice":            head + `{"path":"a.py","line":1,"category":"xss","vulnerable":true,"why":"w"},{"path":"a.py","line":1,"category":"xss","vulnerable":false,"why":"w"}]}`,
		"no sites":         head + `]}`,
		"bad name":         `{"name":"../x","upstream":"u","commit":"c","licence":"MIT","sites":[{"path":"a.py","line":1,"category":"xss","vulnerable":true,"why":"w"}]}`,
		"trailing":         head + `{"path":"a.py","line":1,"category":"xss","vulnerable":true,"why":"w"}]} {}`,
	} {
		if _, err := ParseSuite(strings.NewReader(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseSuite(strings.NewReader(head + `{"path":"a.py","line":1,"related":[2],"category":"xss","vulnerable":true,"why":"w"}]}`)); err != nil {
		t.Errorf("a good suite: %v", err)
	}
}

// TestSuiteScoring: each system is credited with the sites its analyzers
// reported in the site's category on one of its lines — a merged finding for
// every analyzer it names, a superseded Bandit finding for Bandit and the
// gate without taint but not the gate — and each category is scored TPR −
// FPR.
func TestSuiteScoring(t *testing.T) {
	sites := []Site{
		{Path: "a.py", Line: 10, Related: []int{9}, Category: "sql-injection", Vulnerable: true, Why: "w"},
		{Path: "a.py", Line: 20, Category: "sql-injection", Vulnerable: false, Why: "w"},
		{Path: "a.py", Line: 30, Category: "command-injection", Vulnerable: true, Why: "w"},
		{Path: "a.py", Line: 40, Category: "command-injection", Vulnerable: false, Why: "w"},
	}
	rep := &review.Report{
		Findings: []gate.Marked{
			{Finding: finding.Finding{Analyzer: gate.TaintPython, RuleID: "aster.taint.sql-injection", Path: "a.py", StartLine: 10,
				Also: []string{"ast-grep/aster.python.sql-injection"}}},
			{Finding: finding.Finding{Analyzer: gate.TaintPython, RuleID: "aster.taint.command-injection", Path: "a.py", StartLine: 30}},
			// the right line, the wrong category: no credit
			{Finding: finding.Finding{Analyzer: "bandit", RuleID: "B301", Path: "a.py", StartLine: 20}},
		},
		Superseded: []finding.Finding{
			{Analyzer: "bandit", RuleID: "B608", Path: "a.py", StartLine: 9},
			{Analyzer: "bandit", RuleID: "B608", Path: "a.py", StartLine: 20},
			{Analyzer: "bandit", RuleID: "B603", Path: "a.py", StartLine: 40},
		},
	}
	results := matchSites(sites, attributions(rep))
	sc := score(results)
	want := map[string]map[string]Rate{
		"sql-injection": {
			SystemGate:        {TP: 1, FP: 0, TPR: 1, FPR: 0, Score: 1},
			SystemGateWithout: {TP: 1, FP: 1, TPR: 1, FPR: 1, Score: 0},
			SystemBandit:      {TP: 1, FP: 1, TPR: 1, FPR: 1, Score: 0},
			SystemTaintPython: {TP: 1, FP: 0, TPR: 1, FPR: 0, Score: 1},
		},
		"command-injection": {
			SystemGate:        {TP: 1, TPR: 1, Score: 1},
			SystemGateWithout: {FP: 1, FPR: 1, Score: -1},
			SystemBandit:      {FP: 1, FPR: 1, Score: -1},
			SystemTaintPython: {TP: 1, TPR: 1, Score: 1},
		},
	}
	for _, cs := range sc.Categories {
		for sys, r := range want[cs.Category] {
			if cs.Systems[sys] != r {
				t.Errorf("%s %s: %+v, want %+v", cs.Category, sys, cs.Systems[sys], r)
			}
		}
	}
	if sc.Average[SystemGate] != 1 || sc.Average[SystemBandit] != -0.5 || sc.MaxFPR[SystemBandit] != 1 {
		t.Errorf("averages %v, max FPR %v", sc.Average, sc.MaxFPR)
	}
	// Each site's outcome names the systems that found it, so misses and
	// false positives can be listed.
	out := outcomes(results)
	wantFound := [][]string{
		{SystemGate, SystemGateWithout, SystemBandit, SystemTaintPython},
		{SystemGateWithout, SystemBandit},
		{SystemGate, SystemTaintPython},
		{SystemGateWithout, SystemBandit},
	}
	for i, o := range out {
		if o.Path != sites[i].Path || o.Line != sites[i].Line || !slices.Equal(o.Found, wantFound[i]) {
			t.Errorf("site %d: %s:%d found by %v, want %v", i, o.Path, o.Line, o.Found, wantFound[i])
		}
	}
}

// TestCategory maps rules of every analyzer to the suites' categories.
func TestCategory(t *testing.T) {
	for _, c := range []struct {
		analyzer, rule string
		cwe            []string
		want           string
	}{
		{gate.TaintPython, "aster.taint.xxe", nil, "xxe"},
		{"bandit", "B608", []string{"CWE-89"}, "sql-injection"},
		{"bandit", "B506", []string{"CWE-20"}, "insecure-deserialization"},
		{"bandit", "B324", []string{"CWE-327"}, ""},
		{"ast-grep", "aster.python.path-traversal", nil, "path-traversal"},
		{"semgrep", "x", []string{"CWE-918"}, "ssrf"},
		{"gitleaks", "generic-api-key", nil, ""},
	} {
		if got := Category(c.analyzer, c.rule, c.cwe); got != c.want {
			t.Errorf("%s/%s: %q, want %q", c.analyzer, c.rule, got, c.want)
		}
	}
}

func FuzzParseSuite(f *testing.F) {
	f.Add([]byte(`{"name":"x","upstream":"u","commit":"c","licence":"MIT","sites":[{"path":"a.py","line":1,"category":"xss","vulnerable":true,"why":"w"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSuite(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		if len(s.Sites) == 0 || len(s.Sites) > MaxSites {
			t.Fatalf("%d sites accepted", len(s.Sites))
		}
	})
}

// TestSuiteHeldout: a suite may say it is held out (labelled after the
// analyzers were written, by someone who had not read them); the field is
// read, defaults to false, carried into the result and named in the table,
// and a wrong type is refused.
func TestSuiteHeldout(t *testing.T) {
	site := `"sites":[{"path":"a.py","line":1,"category":"xss","vulnerable":true,"why":"w"}]}`
	s, err := ParseSuite(strings.NewReader(`{"name":"x","upstream":"u","commit":"c","licence":"MIT","heldout":true,` + site))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Heldout {
		t.Error("heldout: true was not read")
	}
	s, err = ParseSuite(strings.NewReader(`{"name":"x","upstream":"u","commit":"c","licence":"MIT",` + site))
	if err != nil {
		t.Fatal(err)
	}
	if s.Heldout {
		t.Error("a suite without the field is held out")
	}
	if _, err := ParseSuite(strings.NewReader(`{"name":"x","upstream":"u","commit":"c","licence":"MIT","heldout":"yes",` + site)); err == nil {
		t.Error(`heldout: "yes" accepted`)
	}

	rep := &SuitesReport{Systems: []string{SystemGate}, Suites: []SuiteResult{
		{Name: "dev", Upstream: "u1", Commit: "c1"},
		{Name: "blind", Upstream: "u2", Commit: "c2", Heldout: true},
	}}
	var b strings.Builder
	PrintSuitesTable(&b, rep, true)
	out := b.String()
	if !strings.Contains(out, "blind (u2 @ c2, held-out,") {
		t.Errorf("held-out suite not named as such:\n%s", out)
	}
	if strings.Contains(out, "dev (u1 @ c1, held-out") {
		t.Errorf("development suite named held-out:\n%s", out)
	}
}

// TestHeldoutSuitesKept: the held-out suites in the repository say so, so
// their scores can be told from the development suites'.
func TestHeldoutSuitesKept(t *testing.T) {
	suites, err := LoadSuites(SuiteLabels())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range suites {
		if s.Heldout {
			n++
		}
	}
	if n == 0 {
		t.Error("no held-out suite")
	}
}

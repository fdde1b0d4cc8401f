package finding

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// The recorded outputs come from the real ast-grep running Aster's pack
// (testdata/gen-astgrep.sh).
func TestReadAstGrepRecorded(t *testing.T) {
	stream := readFixture(t, "astgrep/stream.jsonl", FormatAstGrep)
	compact := readFixture(t, "astgrep/compact.json", FormatAstGrep)
	if len(stream.Findings) < 8 {
		t.Fatalf("%d findings in the recorded stream", len(stream.Findings))
	}
	if !slices.EqualFunc(stream.Findings, compact.Findings, func(a, b Finding) bool {
		return a.RuleID == b.RuleID && a.Path == b.Path && a.StartLine == b.StartLine && a.EndColumn == b.EndColumn
	}) {
		t.Error("stream and compact styles read differently")
	}
	none := readFixture(t, "astgrep/none.jsonl", FormatAstGrep)
	if len(none.Findings) != 0 {
		t.Errorf("empty output gave %d findings", len(none.Findings))
	}
	// positive.py line 7: `    cur.execute("SELECT id FROM users WHERE name = '%s'" % name)`
	i := slices.IndexFunc(stream.Findings, func(f Finding) bool {
		return f.RuleID == "aster.python.sql-injection" && f.StartLine == 7
	})
	if i < 0 {
		t.Fatalf("no sql-injection finding on line 7: %+v", stream.Findings)
	}
	f := stream.Findings[i]
	if f.Path != "aster.python.sql-injection/positive.py" || f.StartColumn != 5 || f.EndLine != 7 || f.EndColumn != 65 {
		t.Errorf("place %s:%d:%d-%d:%d", f.Path, f.StartLine, f.StartColumn, f.EndLine, f.EndColumn)
	}
	if f.Severity != Error || !slices.Equal(f.CWE, []string{"CWE-89"}) || f.HelpURI != "https://cwe.mitre.org/data/definitions/89.html" || f.RuleName != "sql-injection" {
		t.Errorf("finding %+v", f)
	}
	if !strings.Contains(f.Message, "query parameters") {
		t.Errorf("message %q", f.Message)
	}
	for _, f := range stream.Findings {
		if len(f.CWE) != 1 || f.Analyzer != "test" || f.StartLine == 0 {
			t.Errorf("finding without CWE or place: %+v", f)
		}
	}
}

func TestReadAstGrepRefuses(t *testing.T) {
	for _, in := range []string{
		`{"text":"x","range":{"start":{"line":0,"column":0},"end":{"line":0,"column":1}},"file":"a.py"}`, // ast-grep run: no ruleId
		`{"results":[]}`,
		`[1, 2]`,
		`"text"`,
		`{"file":"a","ruleId":"r","range":{"start":{"line":"x"}}}`,
		`{"file":"a","ruleId":"r","range":{}}` + "\n{",
	} {
		if _, err := ReadAstGrep(strings.NewReader(in), ReadOptions{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", in, err)
		}
	}
}

func TestReadAstGrepValues(t *testing.T) {
	in := `{"file":"/work/src/a.go","ruleId":"x.y","severity":"hint","message":"m","note":"do this",` +
		`"range":{"start":{"line":-5,"column":2},"end":{"line":3,"column":0}},` +
		`"metadata":{"cwe":["CWE-798: Use of Hard-coded Credentials","cwe-798",259,"junk"],"help_uri":"https://example.com/x"}}`
	res, err := ReadAstGrep(strings.NewReader(in), ReadOptions{Analyzer: "ast-grep", Root: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	f := res.Findings[0]
	if f.Path != "src/a.go" || f.Severity != Note || f.StartLine != 0 || f.EndLine != 4 || f.Message != "m do this" {
		t.Errorf("%+v", f)
	}
	if !slices.Equal(f.CWE, []string{"CWE-798", "CWE-259"}) || f.HelpURI != "https://example.com/x" {
		t.Errorf("cwe %v help %q", f.CWE, f.HelpURI)
	}
}

// A CWE travels into SARIF as GitHub's rule tag and back.
func TestSARIFCarriesCWE(t *testing.T) {
	fs := []Finding{{Analyzer: "ast-grep", RuleID: "aster.go.sql-injection", Severity: Error, Path: "a.go", StartLine: 3, EndLine: 3, Message: "m", CWE: []string{"CWE-89"}}}
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, fs, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"tags": [`) || !strings.Contains(buf.String(), `"external/cwe/cwe-89"`) || !strings.Contains(buf.String(), `"security"`) {
		t.Fatalf("no CWE tag in:\n%s", buf.String())
	}
	res, err := ReadSARIF(&buf, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Findings[0].CWE, []string{"CWE-89"}) {
		t.Errorf("re-read CWE %v", res.Findings[0].CWE)
	}
	// A properties bag of another shape is ignored, not refused.
	odd := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x","rules":[{"id":"a","properties":{"tags":"cwe"}}]}},"results":[{"ruleId":"a","message":{"text":"m"}}]}]}`
	if _, err := ReadSARIF(strings.NewReader(odd), ReadOptions{}); err != nil {
		t.Errorf("odd properties: %v", err)
	}
}

func TestSemgrepCWE(t *testing.T) {
	in := `{"results":[{"check_id":"r","path":"a.py","start":{"line":1,"col":1},"end":{"line":1,"col":2},"extra":{"message":"m","severity":"ERROR","metadata":{"cwe":["CWE-78: OS Command Injection"]}}}],"errors":[]}`
	res, err := ReadSemgrep(strings.NewReader(in), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Findings[0].CWE, []string{"CWE-78"}) {
		t.Errorf("cwe %v", res.Findings[0].CWE)
	}
}

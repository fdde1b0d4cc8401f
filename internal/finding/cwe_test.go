package finding

import (
	"bytes"
	"strings"
	"testing"
)

func TestNormalizeCWE(t *testing.T) {
	for in, want := range map[string]string{
		"CWE-89":                "CWE-89",
		"cwe-089":               "CWE-89",
		"78":                    "CWE-78",
		" external/cwe/cwe-22 ": "CWE-22",
		"CWE-89: Improper Neutralization of Special Elements used in an SQL Command": "CWE-89",
		"CWE 95":   "CWE-95",
		"CWE-":     "",
		"CWE-0":    "",
		"CWE-89a":  "",
		"CWE-1e3":  "",
		"-89":      "",
		"1234567":  "",
		"owasp-a1": "",
		"":         "",
	} {
		if got := NormalizeCWE(in); got != want {
			t.Errorf("NormalizeCWE(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSARIFCWE reads a CWE from each place SARIF producers put one, and
// writes it back as GitHub's rule tag, which reads back the same.
func TestSARIFCWE(t *testing.T) {
	log := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x","rules":[
	  {"id":"rel","relationships":[{"target":{"id":"78","toolComponent":{"name":"CWE"}},"kinds":["superset"]}]},
	  {"id":"relidx","relationships":[{"target":{"id":"22","toolComponent":{"index":0}}}]},
	  {"id":"tag","properties":{"tags":["security",7,"external/cwe/cwe-89"]}},
	  {"id":"semgrep","properties":{"tags":["CWE-95: Eval Injection"]}},
	  {"id":"owasp","properties":{"tags":["OWASP-A03"],"precision":"high"}},
	  {"id":"oddbag","properties":"not an object"}
	]}},
	"taxonomies":[{"name":"CWE"}],
	"results":[
	  {"ruleId":"rel","message":{"text":"a"}},
	  {"ruleId":"relidx","message":{"text":"b"}},
	  {"ruleId":"tag","message":{"text":"c"}},
	  {"ruleId":"semgrep","message":{"text":"d"}},
	  {"ruleId":"owasp","message":{"text":"e"}},
	  {"ruleId":"oddbag","message":{"text":"f"},"taxa":[{"id":"502","toolComponent":{"name":"cwe"}}]}
	]}]}`
	res, err := ReadSARIF(strings.NewReader(log), ReadOptions{Analyzer: "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rel": "CWE-78", "relidx": "CWE-22", "tag": "CWE-89", "semgrep": "CWE-95", "owasp": "", "oddbag": "CWE-502"}
	got := map[string]string{}
	for _, f := range res.Findings {
		got[f.RuleID] = strings.Join(f.CWE, ",")
	}
	for id, cwe := range want {
		if got[id] != cwe {
			t.Errorf("rule %s: CWE %q, want %q", id, got[id], cwe)
		}
	}
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, res.Findings, WriteOptions{Runs: []RunInfo{{Analyzer: "x", Version: "1.2.3", Succeeded: true}}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"version": "1.2.3"`, `"external/cwe/cwe-502"`, `"security"`} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("written SARIF lacks %s:\n%s", s, buf.String())
		}
	}
	again, err := ReadSARIF(&buf, ReadOptions{Analyzer: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range again.Findings {
		if strings.Join(f.CWE, ",") != want[f.RuleID] {
			t.Errorf("re-read rule %s: CWE %q, want %q", f.RuleID, f.CWE, want[f.RuleID])
		}
	}
}

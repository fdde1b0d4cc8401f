package finding

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F, glob string) {
	files, _ := filepath.Glob(filepath.Join("testdata", glob))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// check asserts what every reader promises for any input: no panic, errors
// classified, findings normalised.
func check(t *testing.T, format Format, data []byte) {
	res, err := Read(format, bytes.NewReader(data), ReadOptions{Analyzer: "fuzz", MaxFindings: 100})
	if err != nil {
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("unclassified error: %v", err)
		}
		return
	}
	if len(res.Findings) > 100 {
		t.Fatalf("%d findings past the cap", len(res.Findings))
	}
	for _, f := range res.Findings {
		if f.Severity.Rank() == 0 || f.EndLine < f.StartLine || f.StartLine < 0 || len(f.Message) > maxMessageBytes+4 || f.Analyzer != "fuzz" || f.Fingerprint == "" {
			t.Fatalf("bad finding %+v", f)
		}
		if len(f.Flow) > MaxFlowSteps {
			t.Fatalf("%d flow steps past the cap", len(f.Flow))
		}
		for _, st := range f.Flow {
			if len(st.Text) > MaxFlowStepText+4 || st.Line < 0 {
				t.Fatalf("bad flow step %+v", st)
			}
		}
	}
	// Whatever was read can be written back as valid JSON SARIF and re-read.
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, res.Findings, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSARIF(&buf, ReadOptions{}); err != nil {
		t.Fatalf("re-read written SARIF: %v", err)
	}
}

func FuzzReadSARIF(f *testing.F) {
	addSeeds(f, "tools/*.sarif")
	addSeeds(f, "published/*.sarif")
	f.Add([]byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"invocations":[{"executionSuccessful":true,"properties":{"files":"x","ms":-1},"toolExecutionNotifications":[{"level":"warning","message":{"text":"n"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"../a"}}}]}]}],"results":[{"ruleId":"r","message":{"text":"m"},"codeFlows":[{"threadFlows":[{"locations":[{},{"location":{"message":{"text":"s"}}},{"location":{"physicalLocation":{"region":{"startLine":-3}}}}]}]}]}]}]}`))
	f.Add([]byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x","rules":[{"id":"a","messageStrings":{"m":{"text":"{0}{{}}{9}"}}}]}},"results":[{"ruleIndex":0,"message":{"id":"m","arguments":["q"]},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"%zz"},"region":{"startLine":-4,"endLine":-9}}}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatSARIF, data) })
}

func FuzzReadSemgrep(f *testing.F) {
	addSeeds(f, "semgrep/*.json")
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatSemgrep, data) })
}

func FuzzReadShellcheck(f *testing.F) {
	addSeeds(f, "tools/*.json1")
	f.Add([]byte(`[{"file":"a","line":1,"code":1,"level":"style","message":"m"}]`))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatShellcheck, data) })
}

func FuzzReadBandit(f *testing.F) {
	addSeeds(f, "tools/bandit.json")
	f.Add([]byte(`{"results":[{"filename":"./a.py","line_number":2,"col_offset":4,"end_col_offset":1,"issue_severity":"HIGH","issue_confidence":"LOW","test_id":"B1","issue_cwe":{"id":89,"link":"x"}},{"filename":"c.py","issue_cwe":{"id":"CWE-78"}}],"errors":[{"filename":"b.py","reason":"syntax error"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatBandit, data) })
}

func FuzzReadAstGrep(f *testing.F) {
	addSeeds(f, "astgrep/*.json*")
	f.Add([]byte(`{"file":"a.py","ruleId":"r","severity":"error","range":{"start":{"line":0,"column":0},"end":{"line":0,"column":3}},"metadata":{"cwe":["CWE-89",89,"x"]}}` + "\n" + `[{"file":"b","ruleId":"s","range":{}}]`))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatAstGrep, data) })
}

func FuzzReadGitleaks(f *testing.F) {
	addSeeds(f, "tools/gitleaks.json")
	f.Add([]byte(`[{"RuleID":"aws-access-token","Secret":"AKIAAAAAAAAAAAAAAAAA","File":"../x","StartLine":-1,"EndColumn":-3}][]`))
	f.Add([]byte(`[{"Secret":"-----BEGIN","File":"a"}]`))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatGitleaks, data) })
}

func FuzzReadActionlint(f *testing.F) {
	addSeeds(f, "tools/actionlint.json")
	f.Add([]byte(`[{"message":"\"github.event.issue.title\" is potentially untrusted","filepath":"/work/.github/workflows/a.yml","line":9,"column":-2,"end_column":-7,"kind":"expression"}][]`))
	f.Add([]byte(`[{"kind":"credentials","line":-1}] null`))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatActionlint, data) })
}

func FuzzReadCppcheck(f *testing.F) {
	addSeeds(f, "tools/cppcheck.xml")
	f.Add([]byte(`<results version="2"><errors><error id="a" severity="error" cwe="-3" msg=""><location file="/work/x.c" line="-2" column="-1"/></error><error severity="information"/></errors></results>`))
	f.Add([]byte(`<!DOCTYPE r [<!ENTITY a "b">]><results version="2"/>`))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatCppcheck, data) })
}

func FuzzReadKICS(f *testing.F) {
	addSeeds(f, "tools/kics.json")
	f.Add([]byte(`{"kics_version":"v2","queries":[{"severity":"HIGH","cwe":"-3","files":[{"file_name":"../x","line":-1}]}]}{}`))
	f.Add([]byte(`{"kics_version":"v2","queries":null}`))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatKICS, data) })
}

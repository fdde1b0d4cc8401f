package finding

import (
	"os"
	"strings"
	"testing"
)

// TestReadKICS reads a real kics v2.2.0 report (the image's kics over a
// Dockerfile and a pod manifest): each place a query matched is a finding on
// its line, with the query's CWE from the report and its severity.
func TestReadKICS(t *testing.T) {
	data, err := os.ReadFile("testdata/tools/kics.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Read(FormatKICS, strings.NewReader(string(data)), ReadOptions{Analyzer: "kics"})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		path string
		line int
		cwe  string
		sev  Severity
	}
	var all []got
	for _, f := range res.Findings {
		all = append(all, got{f.Path, f.StartLine, strings.Join(f.CWE, ","), f.Severity})
		if f.RuleID == "" || f.RuleName == "" || !strings.HasPrefix(f.HelpURI, "https://") {
			t.Errorf("rule of %+v", f)
		}
	}
	want := []got{{"Dockerfile", 5, "CWE-250", Error}, {"deploy/pod.yaml", 10, "CWE-269", Error}}
	if len(all) != len(want) {
		t.Fatalf("findings %+v, want %+v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Errorf("finding %d: %+v, want %+v", i, all[i], want[i])
		}
	}
	for _, bad := range []string{`[]`, `{"queries":[]}`, `not json`, ``} {
		if _, err := Read(FormatKICS, strings.NewReader(bad), ReadOptions{Analyzer: "kics"}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	low := `{"kics_version":"v2","queries":[{"query_id":"a","query_name":"n","severity":"INFO","cwe":"1","files":[{"file_name":"x.yaml","line":1}]},` +
		`{"query_id":"b","query_name":"m","severity":"LOW","cwe":"nope","files":[{"file_name":"/work/y.yaml","line":2}]}]}`
	res, err = Read(FormatKICS, strings.NewReader(low), ReadOptions{Analyzer: "kics"})
	if err != nil || len(res.Findings) != 1 || res.Findings[0].Severity != Note || res.Findings[0].CWE != nil || res.Findings[0].Path != "y.yaml" {
		t.Errorf("INFO left out, LOW a note without a CWE: %+v %v", res.Findings, err)
	}
}

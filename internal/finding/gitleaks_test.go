package finding

import (
	"os"
	"strings"
	"testing"
)

func TestReadGitleaksRecorded(t *testing.T) {
	data, err := os.ReadFile("testdata/tools/gitleaks.json")
	if err != nil {
		t.Fatal(err)
	}
	rr, err := Read(FormatGitleaks, strings.NewReader(string(data)), ReadOptions{Analyzer: "gitleaks"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Findings) != 1 {
		t.Fatalf("%d findings", len(rr.Findings))
	}
	f := rr.Findings[0]
	if f.RuleID != "github-pat" || f.Path != "settings.py" || f.StartLine != 1 || f.StartColumn != 17 || f.EndColumn != 57 || f.Severity != Error {
		t.Errorf("finding %+v", f)
	}
	want := "Uncovered a GitHub Personal Access Token, potentially leading to unauthorized repository access and sensitive content exposure. Found R…(8 chars) at settings.py:1."
	if f.Message != want {
		t.Errorf("message %q\nwant    %q", f.Message, want)
	}
}

func TestReadGitleaksRedacts(t *testing.T) {
	// Assembled here so that no literal key is committed.
	key := "AKIA" + strings.Repeat("Q7", 8)
	pem := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("MIIEpAIBAAKCAQEA", 8) + "\n-----END RSA PRIVATE KEY-----"
	doc := `[{"RuleID":"aws-access-token","Description":"Identified a pattern that may indicate AWS credentials.","StartLine":3,"EndLine":3,"StartColumn":8,"EndColumn":27,
	  "Match":"KEY = \"` + key + `\"","Secret":"` + key + `","File":"./src/cfg.py","Line":"KEY = \"` + key + `\""},
	 {"RuleID":"private-key","Description":"","StartLine":1,"EndLine":3,"Secret":` + jsonString(pem) + `,"Match":` + jsonString(pem) + `,"File":"/work/tests/k.pem"}]
	[]`
	rr, err := ReadGitleaks(strings.NewReader(doc), ReadOptions{Analyzer: "gitleaks", Root: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Findings) != 2 {
		t.Fatalf("%d findings", len(rr.Findings))
	}
	byRule := map[string]Finding{}
	for _, f := range rr.Findings {
		byRule[f.RuleID] = f
		if strings.Contains(f.Message, key[4:]) || strings.Contains(f.Message, "MIIE") {
			t.Errorf("secret in %q", f.Message)
		}
	}
	if m := byRule["aws-access-token"].Message; m != "Identified a pattern that may indicate AWS credentials. Found AKIA…(20 chars) at src/cfg.py:3." {
		t.Errorf("aws: %q", m)
	}
	if m := byRule["private-key"].Message; !strings.HasPrefix(m, "A secret matching gitleaks rule private-key. Found -----BEGIN RSA PRIVATE KEY-----…(") || !strings.HasSuffix(m, " at tests/k.pem:1.") {
		t.Errorf("pem: %q", m)
	}
	if _, err := ReadGitleaks(strings.NewReader(`{"RuleID":"x"}`), ReadOptions{}); err == nil {
		t.Error("an object is not a gitleaks report")
	}
}

func jsonString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func TestRedactSecret(t *testing.T) {
	for in, want := range map[string]string{
		"":        "a secret",
		"hunter2": "h…(7 chars)",
		"abcd":    "…(4 chars)",
		"ghp_" + "0123456789abcdefghij0123456789abcdef": "ghp_…(40 chars)",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn":   "-----BEGIN OPENSSH PRIVATE KEY-----…(42 chars)",
		"é" + strings.Repeat("x", 30):                   "…(31 chars)",
		"`rm`" + strings.Repeat("x", 20):                "…(24 chars)",
	} {
		if got := RedactSecret(in); got != want {
			t.Errorf("RedactSecret(%q) = %q, want %q", in, got, want)
		}
	}
}

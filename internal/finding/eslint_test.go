package finding

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type cwePlace struct {
	At  place
	CWE string
}

func cwePlaces(fs []Finding) []cwePlace {
	out := make([]cwePlace, 0, len(fs))
	for _, f := range fs {
		out = append(out, cwePlace{place{f.Path, f.StartLine, f.RuleID, f.Severity}, strings.Join(f.CWE, ",")})
	}
	return out
}

// TestReadSecurityTools checks the outputs recorded from the image's Bandit,
// gosec and ESLint (gen-tools.sh): places, severities and CWEs.
func TestReadSecurityTools(t *testing.T) {
	t.Run("bandit", func(t *testing.T) {
		res := readFixture(t, "tools/bandit.json", FormatBandit)
		want := []cwePlace{
			{place{"app.py", 1, "B404", Note}, "CWE-78"},
			{place{"app.py", 5, "B602", Error}, "CWE-78"},
			{place{"db.py", 2, "B608", Warning}, "CWE-89"},
			{place{"db.py", 7, "B106", Note}, "CWE-259"},
		}
		if d := cmp.Diff(want, cwePlaces(res.Findings)); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
		// The recorded B106 quotes the password; the finding does not.
		if m := res.Findings[3].Message; strings.Contains(m, "hunter2") || m != "Possible hardcoded password (value redacted)" {
			t.Errorf("B106 message %q", m)
		}
	})
	t.Run("gosec", func(t *testing.T) {
		res := readFixture(t, "tools/gosec.sarif", FormatSARIF)
		got := map[cwePlace]bool{}
		for _, p := range cwePlaces(res.Findings) {
			got[p] = true
		}
		for _, want := range []cwePlace{
			{place{"svc/handler.go", 13, "G204", Error}, "CWE-78"},
			{place{"svc/handler.go", 14, "G202", Error}, "CWE-89"},
			{place{"svc/handler.go", 18, "G401", Error}, "CWE-328"},
		} {
			if !got[want] {
				t.Errorf("missing %+v in %v", want, got)
			}
		}
		for _, f := range res.Findings {
			if len(f.CWE) == 0 {
				t.Errorf("gosec %s without a CWE", f.RuleID)
			}
		}
	})
	t.Run("eslint", func(t *testing.T) {
		res := readFixture(t, "tools/eslint.json", FormatESLint)
		want := []cwePlace{
			{place{"web/server.js", 5, "no-eval", Error}, "CWE-95"},
			{place{"web/server.js", 5, "security/detect-eval-with-expression", Error}, "CWE-95"},
			{place{"web/server.js", 6, "security/detect-child-process", Warning}, "CWE-78"},
			{place{"web/server.js", 7, "security/detect-non-literal-fs-filename", Warning}, "CWE-22"},
			{place{"web/server.js", 8, "no-new-func", Error}, "CWE-95"},
		}
		if d := cmp.Diff(want, cwePlaces(res.Findings)); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
		if len(res.ToolErrors) != 1 || !strings.Contains(res.ToolErrors[0], "web/broken.js") || !strings.Contains(res.ToolErrors[0], "Parsing error") {
			t.Errorf("tool errors %q: the unparsable file is one", res.ToolErrors)
		}
		if f := res.Findings[0]; f.StartColumn == 0 || f.EndColumn <= f.StartColumn || f.HelpURI != "https://eslint.org/docs/latest/rules/no-eval" {
			t.Errorf("finding %+v", f)
		}
	})
}

func TestReadESLintGarbage(t *testing.T) {
	for _, in := range []string{"", "{}", `{"filePath":"a"}`, "null", `[{"filePath":"a","messages":[{"ruleId":5}]}]`, "Oops! Something went wrong!"} {
		if _, err := ReadESLint(strings.NewReader(in), ReadOptions{}); err == nil {
			t.Errorf("ReadESLint(%q) read garbage", in)
		}
	}
	// Two batches (xargs) read as one.
	two := `[{"filePath":"/work/a.js","messages":[{"ruleId":"no-eval","severity":2,"message":"m","line":1,"column":1}]}]
[{"filePath":"/work/b.js","messages":[{"ruleId":"security/detect-unsafe-regex","severity":1,"message":"m","line":2,"column":3}]}]`
	res, err := ReadESLint(strings.NewReader(two), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []cwePlace{{place{"a.js", 1, "no-eval", Error}, "CWE-95"}, {place{"b.js", 2, "security/detect-unsafe-regex", Warning}, "CWE-1333"}}
	if d := cmp.Diff(want, cwePlaces(res.Findings)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func FuzzReadESLint(f *testing.F) {
	addSeeds(f, "tools/eslint.json")
	f.Add([]byte(`[{"filePath":"/work/a.js","messages":[{"ruleId":"no-eval","severity":2,"message":"m","line":3,"column":9,"endLine":1,"endColumn":2},{"fatal":true,"ruleId":null,"message":"Parsing error"}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) { check(t, FormatESLint, data) })
}

package gate

import (
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
)

func TestClassify(t *testing.T) {
	p := DefaultPolicy()
	for _, c := range []struct {
		path string
		want []Class
	}{
		{"src/app.py", nil},
		{"tests/test_app.py", []Class{ClassTests}},
		{"pkg/server/handler_test.go", []Class{ClassTests}},
		{"web/src/button.spec.ts", []Class{ClassTests}},
		{"conftest.py", []Class{ClassTests}},
		{"src/__tests__/x.js", []Class{ClassTests}},
		{"tests/certs/server.key", []Class{ClassTests}},
		{"internal/x/testdata/in.json", []Class{ClassFixtures}},
		{"tests/fixtures/key.pem", []Class{ClassFixtures, ClassTests}},
		{"docs/config.rst", []Class{ClassDocs}},
		{"README.md", []Class{ClassDocs}},
		{"examples/tutorial/tests/test_auth.py", []Class{ClassTests, ClassExamples}},
		{"vendor/github.com/x/y.go", []Class{ClassVendored}},
		{"web/node_modules/lodash/index.js", []Class{ClassVendored}},
		{"api/v1/api.pb.go", []Class{ClassGenerated}},
		{"static/app.min.js", []Class{ClassGenerated}},
		{"src/testing_utils.py", nil},    // a name that only starts like a test directory
		{"src/contest.py", nil},          // not conftest.py
		{"src/documentation.py", nil},    // a file, not the documentation/ directory
		{"latest/release.py", nil},       // "test" inside a segment
		{"src/test_helpers/x.py", nil},   // test_*.py is a file pattern only
		{"app/examples.py", nil},         // a file named like the directory
		{"tools/vendor_check.sh", nil},   // not vendor/
		{"third_party_notes.txt", nil},   // not third_party/
		{"src/generated_client.go", nil}, // no generated suffix
	} {
		if got := p.Classify(c.path); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.path, got, c.want)
		}
	}
}

func mark(path, analyzer, rule string, sev finding.Severity) Marked {
	return Marked{Finding: finding.Finding{Path: path, Analyzer: analyzer, RuleID: rule, Severity: sev, StartLine: 3, EndLine: 3}, Reported: true}
}

func TestPolicyApply(t *testing.T) {
	ms := []Marked{
		mark("tests/test_app.py", "bandit", "B101", finding.Note),                // assert in a test
		mark("src/app.py", "bandit", "B101", finding.Note),                       // assert in code: kept
		mark("tests/test_app.py", "bandit", "B602", finding.Error),               // shell=True in a test
		mark("tests/certs/server.key", "gitleaks", "private-key", finding.Error), // a test key
		mark("src/keys/server.key", "gitleaks", "private-key", finding.Error),    // a key in code: kept
		mark("tests/test_s3.py", "gitleaks", "aws-access-token", finding.Error),  // a cloud key, anywhere: kept
		mark("testdata/creds.json", "gitleaks", "github-pat", finding.Error),     // even in fixtures: kept
		mark("docs/config.rst", "gitleaks", "generic-api-key", finding.Error),    // a docs example
		mark("examples/app.py", "bandit", "B105", finding.Note),                  // an example password
		mark("testdata/bad.sh", "shellcheck", "SC2086", finding.Note),            // anything in fixtures
		mark("vendor/lib/x.py", "bandit", "B602", finding.Error),                 // anything vendored
	}
	ms[1].Path = "src/app.py"
	outside := mark("tests/test_b.py", "bandit", "B101", finding.Note)
	outside.Reported = false
	ms = append(ms, outside)
	DefaultPolicy().Apply(ms)
	wantSup := map[int]string{0: "tests/all", 2: "tests/all", 3: "tests/all", 7: "docs/secret", 8: "examples/secret", 9: "fixtures/all", 10: "vendored/all"}
	for i, m := range ms {
		got := ""
		if m.Suppressed != "" {
			got = string(m.Suppressed) + "/" + m.SuppressedBy
		}
		if got != wantSup[i] {
			t.Errorf("%d %s %s/%s: suppressed %q, want %q", i, m.Path, m.Analyzer, m.RuleID, got, wantSup[i])
		}
		if m.Reported == (got != "") && i != len(ms)-1 {
			t.Errorf("%d: reported %v with suppressed %q", i, m.Reported, got)
		}
	}
	if ms[len(ms)-1].Suppressed != "" || len(ms[len(ms)-1].Classes) != 1 {
		t.Errorf("a finding outside the diff is classified, not suppressed: %+v", ms[len(ms)-1])
	}
	s := Summarize(ms)
	if s.Reported != 4 || s.Suppressed != 7 || s.OutsideDiff != 1 || s.Total != len(ms) {
		t.Errorf("summary %+v", s)
	}
	text := strings.Join(SuppressedText(s), "; ")
	for _, want := range []string{"3 in tests: bandit/B101×1, bandit/B602×1, gitleaks/private-key×1", "1 in fixtures: shellcheck/SC2086×1", "1 in docs: gitleaks/generic-api-key×1"} {
		if !strings.Contains(text, want) {
			t.Errorf("suppressed text %q lacks %q", text, want)
		}
	}
	if Fails(ms, finding.Error) != true {
		t.Error("the kept errors must fail")
	}
}

func TestPolicySettings(t *testing.T) {
	p, err := NewPolicy(map[Class]ClassSettings{
		ClassTests:    {Suppress: []string{}, ExtraGlobs: []string{"qa/"}},
		ClassDocs:     {Globs: []string{}},
		ClassVendored: {Suppress: []string{"bandit/B6*", "cloud-key"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ms := []Marked{
		mark("tests/test_app.py", "bandit", "B101", finding.Note),          // tests report everything
		mark("qa/check.py", "bandit", "B101", finding.Note),                // qa/ is tests now
		mark("docs/x.md", "gitleaks", "generic-api-key", finding.Error),    // docs class off
		mark("vendor/x.py", "bandit", "B602", finding.Error),               // glob selector
		mark("vendor/x.py", "bandit", "B303", finding.Warning),             // not selected
		mark("vendor/k.py", "gitleaks", "aws-access-token", finding.Error), // named explicitly
	}
	p.Apply(ms)
	for i, want := range []Class{"", "", "", ClassVendored, "", ClassVendored} {
		if ms[i].Suppressed != want {
			t.Errorf("%d %s: suppressed %q, want %q", i, ms[i].Path, ms[i].Suppressed, want)
		}
	}
	if !slices.Contains(ms[1].Classes, ClassTests) {
		t.Errorf("extra glob not applied: %v", ms[1].Classes)
	}
	for _, bad := range []map[Class]ClassSettings{
		{"unit": {}},
		{ClassTests: {Suppress: []string{"asserts"}}},
		{ClassTests: {Suppress: []string{"bandit/"}}},
		{ClassTests: {Suppress: []string{"bandit/[B"}}},
		{ClassTests: {Globs: []string{"../x"}}},
	} {
		if _, err := NewPolicy(bad); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

func TestCategories(t *testing.T) {
	for _, c := range []struct {
		analyzer, rule, want string
	}{
		{"gitleaks", "aws-access-token", CategoryCloudKey},
		{"gitleaks", "github-pat", CategoryCloudKey},
		{"gitleaks", "generic-api-key", CategorySecret},
		{"gitleaks", "private-key", CategorySecret},
		{"bandit", "B101", CategoryAssert},
		{"bandit", "B106", CategorySecret},
		{"gosec", "G101", CategorySecret},
		{"astgrep", "python-hardcoded-password", CategorySecret},
		{"bandit", "B602", ""},
		{"shellcheck", "SC2086", ""},
	} {
		got := strings.Join(Categories(finding.Finding{Analyzer: c.analyzer, RuleID: c.rule}), ",")
		if got != c.want {
			t.Errorf("%s/%s: %q, want %q", c.analyzer, c.rule, got, c.want)
		}
	}
}

package review

import (
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/testrun"
)

func gosecResult(t *testing.T, rep *Report) gate.AnalyzerResult {
	t.Helper()
	i := slices.IndexFunc(rep.Analyzers, func(a gate.AnalyzerResult) bool { return a.Name == "gosec" })
	if i < 0 {
		t.Fatalf("gosec did not run: %+v", rep.Analyzers)
	}
	return rep.Analyzers[i]
}

// TestReviewGoModuleWithDeps reviews a module that needs a module the
// sandbox cannot download: gosec still checks every package (the planted
// command injection in the package that imports it is found), the review is
// not incomplete, and gosec's row names the package checked without its
// dependencies' types.
func TestReviewGoModuleWithDeps(t *testing.T) {
	e := newEngine(t)
	dir := baseAndFeature(t, "godeps", map[string]string{"README.md": "base\n"}, map[string]string{
		".aster.yml": "analyzers:\n  ast-grep:\n    enabled: false\n",
		"go.mod":     "module example.com/withdeps\n\ngo 1.26\n\nrequire github.com/google/uuid v1.6.0\n",
		"go.sum": "github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=\n" +
			"github.com/google/uuid v1.6.0/go.mod h1:TfLIr5u1IxeOVgddb2/Gvpuz5WUIxZKMi1ZZJ1yqCbk=\n",
		"main.go": `package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/google/uuid"
)

func main() {
	fmt.Println(uuid.NewString())
	_ = exec.Command("sh", "-c", os.Args[1]).Run()
}
`,
		"calc/calc.go": "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int { return a + b }\n",
	})
	rep := review(t, e, dir, Options{})
	g := gosecResult(t, rep)
	if g.Status != gate.StatusOK {
		t.Fatalf("gosec: %s %s (stderr %s)", g.Status, g.Reason, g.Stderr)
	}
	if !slices.ContainsFunc(rep.Findings, func(f gate.Marked) bool {
		return f.Analyzer == "gosec" && f.RuleID == "G204" && f.Path == "main.go" && f.StartLine == 13
	}) {
		t.Errorf("no G204 at main.go:13: %+v", rep.Findings)
	}
	if len(g.Notices) != 1 || g.Notices[0].Path != "main.go" || !strings.Contains(g.Notices[0].Text, "example.com/withdeps was checked without the types of its dependencies") {
		t.Errorf("notices %+v, want one naming main.go's package", g.Notices)
	}
	if rep.Conclusion == Incomplete {
		t.Errorf("conclusion incomplete")
	}
}

// TestReviewGoVersions: a module declaring the image's Go (1.26) is checked;
// for one declaring a Go the image lacks, gosec is skipped and the tests
// error, each with a note that says which Go it needs.
func TestReviewGoVersions(t *testing.T) {
	e := newEngine(t)
	files := func(goLine string) map[string]string {
		return map[string]string{
			".aster.yml":   "analyzers:\n  ast-grep:\n    enabled: false\n",
			"go.mod":       "module example.com/v\n\ngo " + goLine + "\n",
			"calc/calc.go": "package calc\n\nimport \"os/exec\"\n\n// Run runs s.\nfunc Run(s string) error { return exec.Command(\"sh\", \"-c\", s).Run() }\n",
		}
	}
	rep := review(t, e, baseAndFeature(t, "go126", map[string]string{"README.md": "base\n"}, files("1.26")), Options{})
	if g := gosecResult(t, rep); g.Status != gate.StatusOK || g.Findings != 1 || len(g.Notices) != 0 {
		t.Errorf("go 1.26: gosec %s %q, %d findings, notices %+v (stderr %s)", g.Status, g.Reason, g.Findings, g.Notices, g.Stderr)
	}
	rep = review(t, e, baseAndFeature(t, "go199", map[string]string{"README.md": "base\n"}, files("1.99")), Options{Tests: e.tests})
	g := gosecResult(t, rep)
	if rep.Tests == nil || rep.Tests.Status != TestsError || !strings.HasPrefix(rep.Tests.Reason, "needs go 1.99: ") || !strings.Contains(rep.Tests.Reason, "the image has go 1.26") {
		t.Errorf("go 1.99: tests %+v", rep.Tests)
	}
	if g.Status != gate.StatusSkipped || !strings.HasPrefix(g.Reason, "needs go 1.99: ") || !strings.Contains(g.Reason, "the image has go 1.26") {
		t.Errorf("go 1.99: gosec %s %q", g.Status, g.Reason)
	}
}

func TestGoTooNew(t *testing.T) {
	goPlan, pyPlan := testrun.GoPlan(), testrun.PytestPlan()
	for _, c := range []struct {
		plan       testrun.Plan
		stderr     string
		need, have string
	}{
		{goPlan, "go: go.mod requires go >= 1.99 (running go 1.26.8; GOTOOLCHAIN=local)\n", "1.99", "1.26.8"},
		{goPlan, "go: errors parsing go.mod:\ngo: module example.com/x requires go >= 1.27.1 (running go 1.26.8; GOTOOLCHAIN=local)\n", "1.27.1", "1.26.8"},
		{goPlan, "FAIL example.com/x [build failed]\n", "", ""},
		{goPlan, "panic: go: go.mod requires go >= 1.99 (running go 1.26.8;", "", ""},
		{pyPlan, "go: go.mod requires go >= 1.99 (running go 1.26.8; GOTOOLCHAIN=local)\n", "", ""},
	} {
		need, have, ok := goTooNew(c.plan, []byte(c.stderr))
		if need != c.need || have != c.have || ok != (c.need != "") {
			t.Errorf("%q: %q %q %v", c.stderr, need, have, ok)
		}
	}
}

package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/asterhq/aster"

// rule forbids every package under from (the package itself or one below it)
// to import anything under to, in its code or its tests.
type rule struct {
	from, to string // paths inside the module
	why      string
	// pending names the work that makes the rule hold; until it is merged the
	// rule is reported and skipped, not enforced. Clear it to enforce.
	pending string
}

var rules = []rule{
	{from: "internal/sandbox", to: "internal/config",
		why: "runtimes declare their own defaults; config composes them (issue 36 item 1)"},
	{from: "internal/github", to: "internal/config",
		why: "the GitHub client declares its own defaults (issue 36 item 1)"},
	{from: "internal/llm", to: "internal/config",
		why: "the model clients declare their own defaults (issue 36 item 1)"},
	{from: "internal/store", to: "internal/config",
		why: "the job queue declares its own defaults (issue 36 item 1)"},
	{from: "internal/gate", to: "internal/config",
		why: "the gate declares its analyzers' defaults and reads the limits from sandbox (issue 36 item 1)"},
	{from: "internal/review", to: "internal/config",
		why: "the review owns its snapshot defaults; the commands pass it its settings (issue 36 item 1)"},
	{from: "internal/llm", to: "internal/review",
		why: "the model client is below the review, not part of it (issue 36 item 2)"},
	{from: "internal/publish", to: "internal/github",
		why: "what a pull request shows is forge-neutral; the GitHub adapter translates it (issue 38 item 4)"},
	{from: "internal/review", to: "internal/publish",
		why: "publishing renders a review's report, not the reverse (issue 38 item 4)"},
	{from: "internal/bench", to: "internal/cli",
		why: "the benchmark uses the wiring, not the command line (issue 36 item 2)"},
}

// pkg is the part of `go list -json` the rules read.
type pkg struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
}

// under reports whether path is dir or a package below it: internal/sandbox
// covers internal/sandbox/oci but not internal/sandboxapi.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// violations lists "pkg imports dep" for each import that breaks r, and how
// many packages r applies to.
func violations(r rule, pkgs []pkg) (bad []string, covered int) {
	from, to := module+"/"+r.from, module+"/"+r.to
	for _, p := range pkgs {
		if !under(p.ImportPath, from) {
			continue
		}
		covered++
		seen := map[string]bool{}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if under(imp, to) && !seen[imp] {
				seen[imp] = true
				bad = append(bad, fmt.Sprintf("%s imports %s", strings.TrimPrefix(p.ImportPath, module+"/"), strings.TrimPrefix(imp, module+"/")))
			}
		}
	}
	slices.Sort(bad)
	return bad, covered
}

// listPackages runs `go list -json` over the module's packages.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	goBin, err := exec.LookPath("go") // `go test` puts its own go first in PATH
	if err != nil {
		t.Fatalf("the go command is needed to read the import graph: %v", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(goBin, "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportRules: no package imports what a rule forbids it.
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	for _, r := range rules {
		t.Run(strings.ReplaceAll(r.from+" not "+r.to, "/", "_"), func(t *testing.T) {
			bad, covered := violations(r, pkgs)
			if covered == 0 {
				t.Fatalf("no package under %s: the rule checks nothing (moved? update rules)", r.from)
			}
			if r.pending != "" {
				t.Skipf("not enforced until %s; today %d import(s): %s", r.pending, len(bad), strings.Join(bad, "; "))
			}
			for _, b := range bad {
				t.Errorf("%s: %s", b, r.why)
			}
		})
	}
}

// TestViolations: the rule matcher itself, on a made-up graph.
func TestViolations(t *testing.T) {
	m := func(s string) string { return module + "/" + s }
	pkgs := []pkg{
		{ImportPath: m("internal/sandbox"), Imports: []string{"fmt", m("api")}},
		{ImportPath: m("internal/sandbox/oci"), TestImports: []string{m("internal/config")}},
		{ImportPath: m("internal/sandbox/oci/ocitest"), XTestImports: []string{m("internal/config/sub"), m("internal/config/sub")}},
		{ImportPath: m("internal/sandboxapi"), Imports: []string{m("internal/config")}},
		{ImportPath: m("internal/sandbox/docker"), Imports: []string{m("internal/configx")}},
	}
	bad, covered := violations(rule{from: "internal/sandbox", to: "internal/config"}, pkgs)
	want := []string{"internal/sandbox/oci imports internal/config", "internal/sandbox/oci/ocitest imports internal/config/sub"}
	if covered != 4 || !slices.Equal(bad, want) {
		t.Errorf("violations = %q over %d packages, want %q over 4", bad, covered, want)
	}
}

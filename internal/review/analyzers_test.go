package review

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/gate"
)

// securityRepo is a repository whose feature branch adds one planted
// weakness per language: SQL built with % in Python, a shell command and a
// query built from request data in Go, eval of request data in JavaScript.
func securityRepo(t *testing.T) string {
	t.Helper()
	return baseAndFeature(t, "security", map[string]string{
		"README.md": "base\n",
		// Aster's ast-grep rules find these weaknesses too, and the gate would merge the
		// other analyzers' findings into theirs (one problem per line); where Aster's
		// taint engines run, Bandit's B608 and ESLint's eval rules are left to them: this
		// test is about the image's other analyzers, so the rule pack and the taint
		// engines are off.
		".aster.yml": "analyzers:\n  ast-grep:\n    enabled: false\n  taint-python:\n    enabled: false\n  taint-js:\n    enabled: false\n",
	}, map[string]string{
		"app/users.py": `import sqlite3


def find_user(name):
    conn = sqlite3.connect("app.db")
    cursor = conn.cursor()
    cursor.execute("SELECT id FROM users WHERE name = '%s'" % name)
    return cursor.fetchone()
`,
		"go.mod": "module example.com/svc\n\ngo 1.22\n",
		"svc/handler.go": `package svc

import (
	"database/sql"
	"net/http"
	"os/exec"
)

// Handler runs what it is asked to.
func Handler(db *sql.DB) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out, _ := exec.Command(r.URL.Query().Get("cmd")).Output()
		rows, err := db.Query("SELECT id FROM users WHERE name = '" + r.URL.Query().Get("name") + "'")
		if err == nil {
			rows.Close()
		}
		w.Write(out)
	}
}
`,
		"web/server.js": `const express = require("express");
const app = express();

app.get("/calc", (req, res) => {
  const result = eval(req.query.x);
  res.send(String(result));
});

app.listen(3000);
`,
	})
}

// TestReviewSecurityAnalyzers runs the real Bandit, gosec and ESLint of the
// image over the planted weaknesses: each is reported on its line with its
// CWE, and every analyzer's version reaches the JSON, Markdown and SARIF
// renderings.
func TestReviewSecurityAnalyzers(t *testing.T) {
	e := newEngine(t)
	rep := review(t, e, securityRepo(t), Options{})
	type key struct {
		at
		cwe string
	}
	got := map[key]bool{}
	for _, f := range rep.Findings {
		if f.Reported {
			got[key{at{f.Analyzer, f.RuleID, f.Path, f.StartLine}, strings.Join(f.CWE, ",")}] = true
		}
	}
	for _, want := range []key{
		{at{"bandit", "B608", "app/users.py", 7}, "CWE-89"},
		{at{"gosec", "G204", "svc/handler.go", 12}, "CWE-78"},
		{at{"gosec", "G202", "svc/handler.go", 13}, "CWE-89"},
		{at{"eslint", "security/detect-eval-with-expression", "web/server.js", 5}, "CWE-95"},
		{at{"eslint", "no-eval", "web/server.js", 5}, "CWE-95"},
	} {
		if !got[want] {
			t.Errorf("missing %+v; reported: %v", want, got)
		}
	}
	versions := map[string]string{}
	for _, a := range rep.Analyzers {
		versions[a.Name] = a.Version
		if (a.Name == "bandit" || a.Name == "gosec" || a.Name == "eslint") && a.Status != gate.StatusOK {
			t.Errorf("%s: %s %s (stderr %s)", a.Name, a.Status, a.Reason, a.Stderr)
		}
	}
	for _, name := range []string{"gitleaks", "shellcheck", "bandit", "gosec", "eslint"} {
		if versions[name] == "" {
			t.Errorf("no version for %s: %v", name, versions)
		}
	}
	if v := versions["bandit"]; v == "" || strings.HasPrefix(v, "1.6.") {
		t.Errorf("bandit %q: the image's Bandit must understand its Python (1.7 or later)", v)
	}

	var md, sarif bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| gosec | " + versions["gosec"] + " | ok |", "bandit/B608 (CWE-89)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if err := WriteSARIF(&sarif, rep, SARIFOptions{ToolVersion: "test", Analyzers: gate.Builtins()}); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Name    string `json:"name"`
					Version string `json:"version"`
					Rules   []struct {
						ID         string `json:"id"`
						Properties struct {
							Tags []string `json:"tags"`
						} `json:"properties"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(sarif.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	tagged := map[string]bool{}
	for _, run := range log.Runs {
		if run.Tool.Driver.Version != versions[run.Tool.Driver.Name] {
			t.Errorf("SARIF run %s: driver version %q, report says %q", run.Tool.Driver.Name, run.Tool.Driver.Version, versions[run.Tool.Driver.Name])
		}
		for _, r := range run.Tool.Driver.Rules {
			for _, tag := range r.Properties.Tags {
				tagged[run.Tool.Driver.Name+"/"+r.ID+" "+tag] = true
			}
		}
	}
	for _, want := range []string{"bandit/B608 external/cwe/cwe-89", "gosec/G204 external/cwe/cwe-78", "eslint/no-eval external/cwe/cwe-95"} {
		if !tagged[want] {
			t.Errorf("SARIF lacks rule tag %s: %v", want, tagged)
		}
	}
	validateSARIF(t, sarif.Bytes())
}

// TestReviewGoCleanModule reviews a change to a Go module gosec has nothing
// to say about: gosec prints no report when it finds nothing in quiet mode,
// and that silence must be a clean result, not a failed analyzer.
func TestReviewGoCleanModule(t *testing.T) {
	e := newEngine(t)
	dir := baseAndFeature(t, "goclean", map[string]string{
		"README.md": "base\n",
	}, map[string]string{
		"go.mod": "module example.com/clean\n\ngo 1.22\n",
		"calc/calc.go": `package calc

// Add returns the sum of a and b.
func Add(a, b int) int { return a + b }
`,
	})
	rep := review(t, e, dir, Options{})
	for _, a := range rep.Analyzers {
		if a.Name != "gosec" {
			continue
		}
		if a.Status != gate.StatusOK {
			t.Fatalf("gosec on a clean module: %s %s (stderr %s)", a.Status, a.Reason, a.Stderr)
		}
		for _, f := range rep.Findings {
			if f.Analyzer == "gosec" {
				t.Errorf("gosec finding on a clean module: %+v", f)
			}
		}
		return
	}
	t.Fatalf("gosec did not run: %+v", rep.Analyzers)
}

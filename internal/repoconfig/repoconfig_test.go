package repoconfig

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
)

const full = `
version: 1
fail_on: warning
filter_mode: diff_context
instructions: |
  Focus on security. Ignore style.
paths:
  ignore: ["vendor/", "**/*.min.js", "docs/generated/**"]
tests:
  command: go test ./...
  timeout: 5m
limits:
  max_file_bytes: 2m
analyzers:
  bandit:
    enabled: false
  semgrep:
    command: [semgrep, scan, --config, rules/, --json, --metrics, "off", .]
    requires: ["rules/*.yml"]
  ruff:
    command: [ruff, check, --output-format, sarif, --exit-zero, "{files}"]
    format: sarif
    files: ["*.py"]
    timeout: 1m
`

func TestParseFull(t *testing.T) {
	c, err := Parse([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if c.FailOnSeverity() != finding.Warning || c.Mode() != gate.ModeDiffContext || c.MaxFileSize() != 2<<20 {
		t.Errorf("fail_on %q mode %q max %d", c.FailOnSeverity(), c.Mode(), c.MaxFileSize())
	}
	if d := cmp.Diff(Command{"sh", "-c", "go test ./..."}, c.Tests.Command); d != "" {
		t.Error(d)
	}
	if c.TestTimeout(time.Minute) != 5*time.Minute {
		t.Errorf("timeout %s", c.TestTimeout(time.Minute))
	}
	if !c.Ignore().Match("vendor/x/y.go") || !c.Ignore().Match("web/app.min.js") || c.Ignore().Match("main.go") {
		t.Error("ignore globs")
	}
	as, err := c.Resolve(gate.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"gitleaks", "shellcheck", "taint-python", "ast-grep", "taint-js", "gosec", "eslint", "actionlint", "tfsec", "kics", "cppcheck", "flawfinder", "semgrep", "ruff"}, gate.Names(as)); d != "" {
		t.Errorf("analyzers (-want +got):\n%s", d)
	}
	sg, _ := gate.Lookup(as, "semgrep")
	if sg.Command[3] != "rules/" || sg.Format != finding.FormatSemgrep || !sg.Optional || sg.Requires[0] != "rules/*.yml" {
		t.Errorf("semgrep override keeps the built-in's other fields: %+v", sg)
	}
}

func TestParseEmptyAndDefaults(t *testing.T) {
	for _, in := range []string{"", "\n\n", "# just a comment\n"} {
		c, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		as, _ := c.Resolve(gate.Builtins())
		if len(as) != len(gate.Builtins()) || c.FailOnSeverity() != finding.Error || c.Mode() != gate.ModeAdded || c.MaxFileSize() != DefaultMaxFileBytes {
			t.Errorf("defaults: %+v", c)
		}
	}
	c, _ := Parse([]byte("fail_on: never\n"))
	if c.FailOnSeverity() != "" {
		t.Errorf("never = %q", c.FailOnSeverity())
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"unknown field":      "analyzerz: {}\n",
		"typo in analyzer":   "analyzers:\n  bandit:\n    enabeld: false\n",
		"bad fail_on":        "fail_on: critical\n",
		"bad mode":           "filter_mode: everything\n",
		"bad glob":           "paths:\n  ignore: ['[']\n",
		"extra needs cmd":    "analyzers:\n  ruff:\n    files: ['*.py']\n",
		"bad format":         "analyzers:\n  x:\n    command: [x]\n    format: xml\n",
		"bad name":           "analyzers:\n  Bad Name:\n    command: [x]\n    format: sarif\n",
		"version 2":          "version: 2\n",
		"two documents":      "fail_on: error\n---\nfail_on: note\n",
		"not yaml":           "{{{{",
		"huge timeout":       "tests:\n  timeout: 100h\n",
		"bad max file":       "limits:\n  max_file_bytes: 10\n",
		"command wrong type": "tests:\n  command: {a: b}\n",
		"too big":            "instructions: " + strings.Repeat("x", MaxFileBytes) + "\n",
		"long instructions":  "instructions: " + strings.Repeat("x", MaxInstructionsBytes+1) + "\n",
		"analyzer env":       "analyzers:\n  gitleaks:\n    env: {\"BAD-KEY\": x}\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(in))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if strings.Contains(name, "typo") && !strings.Contains(err.Error(), "enabeld") {
				t.Errorf("message does not name the field: %v", err)
			}
			if strings.Contains(name, "unknown") && !strings.Contains(err.Error(), "line 1") {
				t.Errorf("message has no line: %v", err)
			}
		})
	}
}

func TestAliasBomb(t *testing.T) {
	in := "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
	if _, err := Parse([]byte(in)); err == nil {
		t.Error("accepted")
	}
}

func TestParseClasses(t *testing.T) {
	c, err := Parse([]byte("classes:\n  tests:\n    suppress: []\n    extra_paths: [qa/]\n  docs:\n    paths: []\n  vendored:\n    suppress: [all, bandit/B6*]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Classes["tests"].Suppress; s == nil || len(s) != 0 {
		t.Errorf("suppress: [] must be kept as an empty list (report everything), got %#v", s)
	}
	p, err := c.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Classify("qa/check.py"); len(got) != 1 || got[0] != gate.ClassTests {
		t.Errorf("qa/check.py: %v", got)
	}
	if got := p.Classify("docs/x.md"); len(got) != 0 {
		t.Errorf("docs class is off, got %v", got)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"classes:\n  unit:\n    suppress: []\n", `classes: class "unit" is not one of`},
		{"classes:\n  tests:\n    suppress: [asserts]\n", `classes.tests: suppress: selector "asserts"`},
		{"classes:\n  tests:\n    globs: [x/]\n", "field globs not found"},
		{"classes:\n  docs:\n    paths: [\"../x\"]\n", "classes.docs:"},
	} {
		_, err := Parse([]byte(bad.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error with %q", bad.yaml, err, bad.want)
		}
	}
}

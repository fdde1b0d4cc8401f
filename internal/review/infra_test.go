package review

import (
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
)

// infraOnly turns off the analyzers these tests are not about, so that a
// finding cannot be merged into another analyzer's on the same line.
const infraOnly = "analyzers:\n  ast-grep:\n    enabled: false\n  taint-python:\n    enabled: false\n  taint-js:\n    enabled: false\n"

// infraVulnerable plants one weakness per language the image's actionlint,
// tfsec, kics, cppcheck and flawfinder read, each on a known line.
var infraVulnerable = map[string]string{
	".github/workflows/triage.yml": `name: triage
on:
  issues:
    types: [opened]
jobs:
  label:
    runs-on: ubuntu-latest
    steps:
      - run: echo "New issue ${{ github.event.issue.title }}"
`,
	"infra/main.tf": `resource "aws_security_group" "ssh" {
  name        = "ssh"
  description = "SSH from anywhere"
  ingress {
    description = "ssh"
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}
`,
	"Dockerfile": "FROM debian:13\nRUN useradd app\nUSER app\nCOPY . /app\nUSER root\nCMD [\"/app/run\"]\n",
	"deploy/pod.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: debug
spec:
  containers:
    - name: shell
      image: debian:13
      securityContext:
        privileged: true
`,
	"src/greet.c": `#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	char name[16];
	char cmd[64];
	strcpy(name, argv[1]);
	sprintf(cmd, "echo %s", name);
	system(cmd);
	name[16] = 0;
	return 0;
}
`,
}

// infraClean has the same kinds of files written safely.
var infraClean = map[string]string{
	".github/workflows/triage.yml": `name: triage
on:
  issues:
    types: [opened]
permissions: {}
jobs:
  label:
    runs-on: ubuntu-latest
    steps:
      - run: echo "New issue $TITLE"
        env:
          TITLE: ${{ github.event.issue.title }}
`,
	"infra/main.tf": `resource "random_id" "suffix" {
  byte_length = 8
}
`,
	"Dockerfile": "FROM debian:13\nRUN useradd app\nCOPY . /app\nUSER app\nCMD [\"/app/run\"]\n",
	"deploy/pod.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
    - name: web
      image: nginx:1.27
      securityContext:
        privileged: false
        allowPrivilegeEscalation: false
`,
	"src/greet.c": `#include <stdio.h>

int main(int argc, char **argv) {
	if (argc > 1) {
		printf("hello %s\n", argv[1]);
	}
	return 0;
}
`,
}

var infraAnalyzers = []string{"actionlint", "tfsec", "kics", "cppcheck", "flawfinder"}

// TestReviewInfraVulnerable reviews a change with one planted weakness per
// language of the image's actionlint, tfsec, kics, cppcheck and flawfinder:
// each is reported on its line, with its CWE where the tool gives one, and
// none of these files is listed as not analysed.
func TestReviewInfraVulnerable(t *testing.T) {
	e := newEngine(t)
	feature := map[string]string{".aster.yml": infraOnly, "notes.swift": "print(\"hi\")\n"}
	for k, v := range infraVulnerable {
		feature[k] = v
	}
	rep := review(t, e, baseAndFeature(t, "infra", map[string]string{"README.md": "base\n"}, feature), Options{})
	checkInfraRan(t, rep)
	type hit struct {
		at
		sev finding.Severity
		cwe string
	}
	got := map[hit]bool{}
	for _, f := range rep.Findings {
		if f.Reported {
			got[hit{at{f.Analyzer, f.RuleID, f.Path, f.StartLine}, f.Severity, strings.Join(f.CWE, ",")}] = true
		}
	}
	for _, want := range []hit{
		{at{"actionlint", "actionlint.untrusted-input", ".github/workflows/triage.yml", 9}, finding.Error, "CWE-78,CWE-94"},
		{at{"tfsec", "aws-ec2-no-public-ingress-sgr", "infra/main.tf", 9}, finding.Error, ""},
		{at{"flawfinder", "FF1001", "src/greet.c", 8}, finding.Error, "CWE-120"},
		{at{"flawfinder", "FF1015", "src/greet.c", 9}, finding.Error, "CWE-120"},
		{at{"flawfinder", "FF1044", "src/greet.c", 10}, finding.Error, "CWE-78"},
		{at{"cppcheck", "arrayIndexOutOfBounds", "src/greet.c", 11}, finding.Error, "CWE-788"},
	} {
		if !got[want] {
			t.Errorf("missing %+v", want)
		}
	}
	// kics names its queries by id; the place and the kind are what matter.
	for _, want := range []struct{ path string }{{"Dockerfile"}, {"deploy/pod.yaml"}} {
		if !slices.ContainsFunc(rep.Findings, func(f gate.Marked) bool { return f.Analyzer == "kics" && f.Path == want.path }) {
			t.Errorf("kics found nothing in %s", want.path)
		}
	}
	if !slices.ContainsFunc(rep.Findings, func(f gate.Marked) bool {
		return f.Analyzer == "kics" && f.Path == "Dockerfile" && f.StartLine == 5 && slices.Equal(f.CWE, []string{"CWE-250"})
	}) {
		t.Error("kics: no finding on the Dockerfile's USER root (line 5, CWE-250 from its report)")
	}
	if !slices.ContainsFunc(rep.Findings, func(f gate.Marked) bool {
		return f.Analyzer == "kics" && f.Path == "deploy/pod.yaml" && f.StartLine == 10 && slices.Equal(f.CWE, []string{"CWE-269"})
	}) {
		t.Error("kics: no finding on the pod's privileged: true (line 10, CWE-269 from its report)")
	}
	if rep.Conclusion != Failure {
		t.Errorf("conclusion %s, want failure", rep.Conclusion)
	}
	var na []string
	for _, f := range rep.Files.NotAnalysed {
		na = append(na, f.Path+" ("+f.Language+")")
	}
	// .aster.yml is YAML but no Kubernetes manifest: kics declines it, and
	// nothing else reads it as code.
	if !slices.Equal(na, []string{".aster.yml (YAML)", "notes.swift (Swift)"}) {
		t.Errorf("not analysed: %v, want .aster.yml and notes.swift", na)
	}
	if t.Failed() {
		for _, f := range rep.Findings {
			t.Logf("%s %s %s:%d %s %v", f.Analyzer, f.RuleID, f.Path, f.StartLine, f.Severity, f.CWE)
		}
	}
}

// TestReviewInfraClean reviews the same kinds of files written safely: the
// new analyzers run and report no error or warning.
func TestReviewInfraClean(t *testing.T) {
	e := newEngine(t)
	feature := map[string]string{".aster.yml": infraOnly}
	for k, v := range infraClean {
		feature[k] = v
	}
	rep := review(t, e, baseAndFeature(t, "infraclean", map[string]string{"README.md": "base\n"}, feature), Options{})
	checkInfraRan(t, rep)
	for _, f := range rep.Findings {
		if slices.Contains(infraAnalyzers, f.Analyzer) && f.Severity != finding.Note {
			t.Errorf("finding on safe code: %s %s %s:%d %s %s", f.Analyzer, f.RuleID, f.Path, f.StartLine, f.Severity, f.Message)
		}
	}
}

func checkInfraRan(t *testing.T, rep *Report) {
	t.Helper()
	for _, name := range infraAnalyzers {
		i := slices.IndexFunc(rep.Analyzers, func(a gate.AnalyzerResult) bool { return a.Name == name })
		if i < 0 {
			t.Errorf("%s did not run", name)
			continue
		}
		if a := rep.Analyzers[i]; a.Status != gate.StatusOK || a.Version == "" {
			t.Errorf("%s: %s %q version %q (stderr %s)", name, a.Status, a.Reason, a.Version, a.Stderr)
		}
	}
}

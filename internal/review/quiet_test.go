package review_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/llm"
	"github.com/asterhq/aster/internal/llm/llmtest"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/review/modelstep"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/safetext/safetexttest"
)

// Secrets planted by TestReviewQuietDefaults: a real-looking AWS key id (not
// gitleaks' EXAMPLE one), a documentation example key and a private key body.
const (
	qdAWSKey  = "AKIAQX4Z7MJ2KD5WNB3R"
	qdDocsKey = "192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf"
)

// quietRepo commits a base, then a feature branch with one case of each
// path class and policy.
func quietRepo(t *testing.T) (dir, keyBody string) {
	t.Helper()
	raw := make([]byte, 900)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	keyBody = base64.StdEncoding.EncodeToString(raw)
	var pem strings.Builder
	pem.WriteString("-----BEGIN PRIVATE KEY-----\n")
	for s := keyBody; s != ""; {
		n := min(64, len(s))
		pem.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	pem.WriteString("-----END PRIVATE KEY-----\n")
	dir = review.BaseAndFeature(t, "quiet", map[string]string{"README.md": "# quiet\n"}, map[string]string{
		"src/app.py":                "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n",
		"src/settings.py":           "AWS_ACCESS_KEY_ID = \"" + qdAWSKey + "\"\n",
		"tests/test_app.py":         "from src.app import run\n\n\ndef test_run():\n    assert run(\"true\") == 0\n",
		"tests/test_cloud.py":       "KEY = \"" + qdAWSKey + "\"\n",
		"tests/fixtures/server.key": pem.String(),
		"docs/config.md":            "# Configuration\n\n```python\nSECRET_KEY = '" + qdDocsKey + "'\n```\n",
		"tools/prompt.sh":           "#!/usr/bin/env zsh\nfor f in ${(f)\"$(ls)\"}; do print -P \"%F{red}$f%f\"; done\n",
		"scripts/deploy.sh":         "#!/bin/sh\ncd $1\n",
	})
	return dir, keyBody
}

// TestReviewQuietDefaults runs the real gate over a change with an assert in
// a test, a private key in a test fixture, an example key in the docs, a
// real-looking AWS key in src and in a test, a shell injection, a zsh script
// named .sh and a POSIX script, and checks exactly what is reported and what
// the path-class policy suppressed (and says it did); then that classes: in
// .aster.yml reports everything in tests; and that no secret reaches the
// report or the model's prompt.
func TestReviewQuietDefaults(t *testing.T) {
	runner := review.NewTestGate(t)
	dir, keyBody := quietRepo(t)
	srv := llmtest.OpenAI(t, mtKey)
	srv.Push(llmtest.Reply{Text: `{"summary": "ok", "comments": []}`})
	model := quietModel(t, srv)
	rep := reviewDir(t, runner, dir, review.Options{Reviewer: model})

	got := reported(rep)
	want := map[at]bool{
		{"gitleaks", "aws-access-token", "src/settings.py", 1}:     true,
		{"gitleaks", "aws-access-token", "tests/test_cloud.py", 1}: true,
		// Bandit's B404 is left to taint-python (superseded: it judges every
		// subprocess call of the module). B602 stays, merged with ast-grep's
		// rule on the same line: the shell runs run's own parameter, whose
		// verdict is its callers', and a caller may be out of sight.
		{"bandit", "B602", "src/app.py", 5}:              true,
		{"shellcheck", "SC2164", "scripts/deploy.sh", 2}: true,
	}
	for w := range want {
		if !got[w] {
			t.Errorf("not reported: %+v", w)
		}
	}
	for g := range got {
		if !want[g] {
			t.Errorf("reported but should not be: %+v", g)
		}
	}
	type sup struct {
		at
		class gate.Class
		by    string
	}
	var suppressed []sup
	for _, m := range rep.Findings {
		if m.Suppressed != "" {
			suppressed = append(suppressed, sup{at{m.Analyzer, m.RuleID, m.Path, m.StartLine}, m.Suppressed, m.SuppressedBy})
		}
	}
	wantSup := []sup{
		{at{"gitleaks", "private-key", "tests/fixtures/server.key", 1}, gate.ClassFixtures, "all"},
		{at{"gitleaks", "generic-api-key", "docs/config.md", 4}, gate.ClassDocs, "secret"},
	}
	for _, w := range wantSup {
		if !slices.Contains(suppressed, w) {
			t.Errorf("not suppressed: %+v; suppressed: %+v", w, suppressed)
		}
	}
	if len(suppressed) != len(wantSup) || rep.Summary.Suppressed != len(wantSup) {
		t.Errorf("suppressed %+v (summary %d), want %d", suppressed, rep.Summary.Suppressed, len(wantSup))
	}
	if rep.Summary.Reported+rep.Summary.Suppressed+rep.Summary.OutsideDiff != len(rep.Findings) {
		t.Errorf("summary %+v does not add up to %d findings", rep.Summary, len(rep.Findings))
	}
	// Most severe first.
	for i := 1; i < len(rep.Findings); i++ {
		if rep.Findings[i-1].Severity.Rank() < rep.Findings[i].Severity.Rank() {
			t.Errorf("finding %d (%s) before a more severe one (%s)", i-1, rep.Findings[i-1].Severity, rep.Findings[i].Severity)
		}
	}
	// Bandit is not given the tests: the policy would suppress everything
	// it found there (the assert); gitleaks still reads them.
	for _, a := range rep.Analyzers {
		if a.Name == "bandit" && (a.Status != gate.StatusOK || a.SkippedFiles["in tests, whose findings the path-class policy suppresses"] != 2) {
			t.Errorf("bandit: %+v", a)
		}
		if a.Name == "shellcheck" && (a.Status != gate.StatusOK || a.SkippedFiles["zsh"] != 1 || !strings.Contains(a.Reason, "skipped: zsh (1 file)")) {
			t.Errorf("shellcheck: %+v", a)
		}
	}
	for _, m := range rep.Findings {
		if m.Path == "tools/prompt.sh" {
			t.Errorf("a finding on the zsh script: %+v", m)
		}
		if m.Analyzer == "gitleaks" && m.RuleID == "aws-access-token" && m.Path == "src/settings.py" {
			if !strings.Contains(m.Message, "AKIA…(20 chars) at src/settings.py:1") || !strings.Contains(m.Message, "AWS") {
				t.Errorf("gitleaks message does not say what and where: %q", m.Message)
			}
		}
	}
	if rep.Conclusion != review.Failure {
		t.Errorf("conclusion %s: the AWS key and shell=True are errors", rep.Conclusion)
	}

	var md, js, sarif bytes.Buffer
	if err := review.WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := review.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if err := review.WriteSARIF(&sarif, rep, review.SARIFOptions{ToolVersion: "test", Analyzers: gate.Builtins()}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 findings on the change suppressed by path-class policy: 1 in fixtures: gitleaks/private-key×1; 1 in docs: gitleaks/generic-api-key×1",
		"skipped: zsh (1 file)", "in tests, whose findings the path-class policy suppresses (2 files)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	prompts := ""
	for _, r := range srv.Requests() {
		prompts += string(r.Body)
	}
	if prompts == "" {
		t.Fatal("the model was not called")
	}
	for name, out := range map[string]string{"markdown": md.String(), "json": js.String(), "sarif": sarif.String(), "prompt": prompts} {
		for _, secret := range []string{qdAWSKey, qdDocsKey, keyBody[:40], keyBody[200:240]} {
			if strings.Contains(out, secret) {
				t.Errorf("%s holds a secret (%.8s…)", name, secret)
			}
		}
	}
	if strings.Contains(prompts, "B101") || strings.Contains(prompts, "private-key has") {
		t.Errorf("suppressed findings reached the prompt")
	}

	// classes: in the base's .aster.yml reports everything in tests.
	cfg, err := repoconfig.Parse([]byte("classes:\n  tests:\n    suppress: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := review.FromGit(t.Context(), review.GitOptions{Dir: dir, Base: "main", Head: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	ch.Config = cfg
	rep2, err := review.Run(t.Context(), ch, review.Options{Gate: runner})
	if err != nil {
		t.Fatal(err)
	}
	got2 := reported(rep2)
	if !got2[at{"bandit", "B101", "tests/test_app.py", 5}] || got2[at{"gitleaks", "private-key", "tests/fixtures/server.key", 1}] || rep2.Summary.Suppressed != 2 {
		t.Errorf("with tests reporting everything: reported %v, %d suppressed", got2, rep2.Summary.Suppressed)
	}
}

// mtKey is the model API key of this test: it must never be sent in a prompt.
var mtKey = safetexttest.FakeSecret("sk-live-aster-", 32)

// quietModel is the model step over srv, an OpenAI-compatible fake, as
// modelstep's own tests build it.
func quietModel(t *testing.T, srv *llmtest.Server) *modelstep.ModelReviewer {
	t.Helper()
	p, err := llm.NewOpenAI(llm.OpenAIOptions{Model: "gpt-test", BaseURL: srv.URL, APIKey: mtKey})
	if err != nil {
		t.Fatal(err)
	}
	c := llm.NewClient(p, llm.ClientOptions{MaxCalls: 10, MaxOutputTokens: 2000, MaxRetries: 1,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	r, err := modelstep.NewModelReviewer(modelstep.ModelOptions{Client: c, MaxInputTokens: 20_000, MaxOutputTokens: 2000,
		MaxChunks: 2, MaxComments: 10, Sanitize: safetext.SanitizeOptions{AllowedHosts: []string{"docs.python.org"}, MaxBytes: 3000},
		MaxSummaryBytes: 3000, Secrets: []string{mtKey}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// reviewDir reviews main..feature of dir with opts over runner.
func reviewDir(t *testing.T, runner *gate.Runner, dir string, opts review.Options) *review.Report {
	t.Helper()
	ch, err := review.FromGit(t.Context(), review.GitOptions{Dir: dir, Base: "main", Head: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	opts.Gate = runner
	rep, err := review.Run(t.Context(), ch, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

type at struct {
	analyzer, rule, path string
	line                 int
}

func reported(rep *review.Report) map[at]bool {
	m := map[at]bool{}
	for _, f := range rep.Findings {
		if f.Reported {
			m[at{f.Analyzer, f.RuleID, f.Path, f.StartLine}] = true
		}
	}
	return m
}

// TestReviewGitleaksIgnoresTheRepository: a change that brings its own
// gitleaks configuration (a .gitleaks.toml allowing every path and text)
// and ignore list (the key's fingerprint in .gitleaksignore) still has its
// AWS key reported: gitleaks runs with the image's rules and never sees the
// ignore list.
func TestReviewGitleaksIgnoresTheRepository(t *testing.T) {
	runner := review.NewTestGate(t)
	dir := review.BaseAndFeature(t, "leaks", map[string]string{"README.md": "# leaks\n"}, map[string]string{
		".gitleaks.toml":  "title = \"nothing is a secret\"\n\n[allowlist]\ndescription = \"everything\"\npaths = ['''.*''']\nregexes = ['''.*''']\n",
		".gitleaksignore": "src/settings.py:aws-access-token:1\n",
		"src/settings.py": "AWS_ACCESS_KEY_ID = \"" + qdAWSKey + "\"\n",
	})
	rep := reviewDir(t, runner, dir, review.Options{})
	for _, a := range rep.Analyzers {
		if a.Name == "gitleaks" && a.Status != gate.StatusOK {
			t.Fatalf("gitleaks: %s %q (%s)", a.Status, a.Reason, a.Stderr)
		}
	}
	if got := reported(rep); !got[at{"gitleaks", "aws-access-token", "src/settings.py", 1}] {
		t.Errorf("the AWS key is not reported: %v", got)
	}
}

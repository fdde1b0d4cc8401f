package review

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// demoRepo creates the built-in example repository.
func demoRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	out, err := exec.CommandContext(t.Context(), "sh", filepath.Join(repoRoot(), "examples", "demo-repo", "make-repo.sh"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("make-repo: %v\n%s", err, out)
	}
	return dir
}

// make-repo.sh run twice on one directory makes the example again; a directory it did
// not make is refused and left as it was.
func TestMakeRepoTwice(t *testing.T) {
	dir := demoRepo(t)
	script := filepath.Join(repoRoot(), "examples", "demo-repo", "make-repo.sh")
	if out, err := exec.CommandContext(t.Context(), "sh", script, dir).CombinedOutput(); err != nil || !strings.Contains(string(out), "created") {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(t.Context(), "git", "-C", dir, "rev-parse", "--abbrev-ref", "HEAD").Output(); err != nil || strings.TrimSpace(string(out)) != "feature" {
		t.Fatalf("after the second run: HEAD %q %v", out, err)
	}
	other := t.TempDir()
	keep := filepath.Join(other, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "sh", script, other).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not a demo repository") {
		t.Fatalf("a directory make-repo did not make: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Fatalf("the refused directory was changed: %q %v", b, err)
	}
}

// gitRun runs git in dir with automatic gc and maintenance off: a commit of
// thousands of files otherwise starts a background `git gc --auto` that is
// still writing into the repository when t.TempDir removes it.
func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	base := []string{"-C", dir, "-c", "gc.auto=0", "-c", "maintenance.auto=false"}
	cmd := exec.CommandContext(t.Context(), "git", append(base, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// gitRepo is a test's git repository in its own temporary directory; every
// git command on it goes through gitRun.
type gitRepo struct {
	t   *testing.T
	dir string
}

// newGitRepo initialises the repository name, on branch main, with no commit.
func newGitRepo(t *testing.T, name string) gitRepo {
	t.Helper()
	r := gitRepo{t: t, dir: filepath.Join(t.TempDir(), name)}
	gitRun(t, ".", "init", "-q", "-b", "main", r.dir)
	return r
}

// commit writes files (path → text, mode 0644, directories made as needed)
// and commits the whole working tree with message msg.
func (r gitRepo) commit(msg string, files map[string]string) {
	r.t.Helper()
	for name, text := range files {
		p := filepath.Join(r.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	gitRun(r.t, r.dir, "add", "-A")
	gitRun(r.t, r.dir, "commit", "-q", "-m", msg)
}

// branch creates the branch name at HEAD and checks it out.
func (r gitRepo) branch(name string) {
	r.t.Helper()
	gitRun(r.t, r.dir, "checkout", "-q", "-b", name)
}

// baseAndFeature builds the usual repository of these tests: base committed on
// main, then feature committed on the branch feature, which stays checked out.
func baseAndFeature(t *testing.T, name string, base, feature map[string]string) string {
	t.Helper()
	r := newGitRepo(t, name)
	r.commit("base", base)
	r.branch("feature")
	r.commit("feature", feature)
	return r.dir
}

type engine struct {
	runner *gate.Runner
	tests  *SandboxTests
	label  string
}

func newEngine(t *testing.T) engine {
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 4)
	t.Cleanup(func() { assertNoContainers(t) })
	return engine{
		runner: gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image(), Parallel: 4}),
		tests:  &SandboxTests{Sandbox: mgr, Image: sandboxtest.Image()},
		label:  filepath.Base(t.Name()),
	}
}

// assertNoContainers checks that this test's sandboxes are all gone.
func assertNoContainers(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		return
	}
	out, err := exec.CommandContext(context.Background(), "docker", "ps", "-aq", "--filter", "label=aster.test="+sandboxtest.Label(t)).Output()
	if err == nil && strings.TrimSpace(string(out)) != "" {
		t.Errorf("containers left behind: %s", out)
	}
}

func review(t *testing.T, e engine, dir string, opts Options) *Report {
	t.Helper()
	ch, err := FromGit(t.Context(), GitOptions{Dir: dir, Base: "main", Head: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	opts.Gate = e.runner
	rep, err := Run(t.Context(), ch, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

type at struct {
	analyzer, rule, path string
	line                 int
}

func reported(rep *Report) map[at]bool {
	m := map[at]bool{}
	for _, f := range rep.Findings {
		if f.Reported {
			m[at{f.Analyzer, f.RuleID, f.Path, f.StartLine}] = true
		}
	}
	return m
}

// TestReviewDemo runs the whole gate on the example repository and checks
// each planted problem is found on its line, with the head's .aster.yml
// (which disables gitleaks and never fails) ignored.
func TestReviewDemo(t *testing.T) {
	e := newEngine(t)
	dir := demoRepo(t)
	rep := review(t, e, dir, Options{})
	got := reported(rep)
	for _, want := range []at{
		{"gitleaks", "github-pat", "app/settings.py", 6},
		{"ast-grep", "aster.python.command-injection", "app/jobs.py", 13},
		// The planted shell injection is reported as one: eval of an unquoted variable.
		{"ast-grep", "aster.shell.code-injection", "scripts/deploy.sh", 9},
	} {
		if !got[want] {
			t.Errorf("missing reported finding %+v; reported: %v", want, got)
		}
	}
	// ShellCheck's style level (unquoted expansions) is off by default.
	for g := range got {
		if g.analyzer == "shellcheck" && g.rule == "SC2086" {
			t.Errorf("a ShellCheck style finding was reported: %+v", g)
		}
	}
	for _, f := range rep.Findings {
		if f.Reported && !f.OnAddedLine {
			t.Errorf("added mode reported a finding off the added lines: %+v", f)
		}
		// The token's format prefix may be named ("ghp_…(40 chars)"), never a character of it.
		if regexp.MustCompile(`ghp_[A-Za-z0-9]`).MatchString(f.Message) {
			t.Errorf("secret in a finding: %q", f.Message)
		}
	}
	if rep.Conclusion != Failure || rep.Conclusion.ExitCode() != 1 {
		t.Errorf("conclusion %s", rep.Conclusion)
	}
	if !rep.Config.HeadChanged || !strings.HasPrefix(rep.Config.Source, "base:") || rep.FailOn != "error" {
		t.Errorf("config %+v fail_on %s", rep.Config, rep.FailOn)
	}
	if rep.Model.Status != ModelSkipped || rep.Model.Note != NoProviderNote {
		t.Errorf("model %+v", rep.Model)
	}
	st := map[string]gate.Status{}
	for _, a := range rep.Analyzers {
		st[a.Name] = a.Status
	}
	if st["gitleaks"] != gate.StatusOK || st["shellcheck"] != gate.StatusOK || st["bandit"] != gate.StatusOK || st["semgrep"] != gate.StatusSkipped {
		t.Errorf("analyzers %v", st)
	}

	// The three renderings.
	var md, js, sarif bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**Conclusion: failure**", "`app/jobs.py:13:12` ast-grep/aster.python.command-injection (CWE-78) (also taint-python/aster.taint.command-injection)",
		"4 findings of rules without data flow left to taint-python", NoProviderNote, "edits .aster.yml"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"dropped_comments": []`, `"omitted_files": []`, `"usage": {`, `"cost_usd": 0`, `"tests": null`, `"outside_diff"`} {
		if !strings.Contains(js.String(), key) {
			t.Errorf("json lacks %s", key)
		}
	}
	if err := WriteSARIF(&sarif, rep, SARIFOptions{ToolVersion: "test", Analyzers: gate.Builtins()}); err != nil {
		t.Fatal(err)
	}
	validateSARIF(t, sarif.Bytes())
}

func validateSARIF(t *testing.T, data []byte) {
	t.Helper()
	tool := filepath.Join(repoRoot(), "third_party", "sarif", "node_modules", ".bin", "sarif-multitool")
	if _, err := os.Stat(tool); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("SARIF validator missing in CI: %v", err)
		}
		t.Logf("SARIF validator not installed; skipping validation")
		return
	}
	p := filepath.Join(t.TempDir(), "review.sarif")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "bash", filepath.Join(repoRoot(), "scripts", "validate-sarif.sh"), p).CombinedOutput()
	if err != nil {
		t.Fatalf("SARIF validation: %v\n%s", err, out)
	}
}

// TestReviewFilterModes checks that the modes widen what is reported and
// that nothing is ever dropped.
func TestReviewFilterModes(t *testing.T) {
	e := newEngine(t)
	dir := demoRepo(t)
	counts := map[gate.Mode]int{}
	var total int
	// Bandit's B404 on the unchanged import is the demo's one finding off the
	// added lines; where taint-python runs it is superseded, so the modes are
	// checked with the gate as it is without the taint engine.
	var builtins []gate.Analyzer
	for _, a := range gate.Builtins() {
		if a.Name != gate.TaintPython {
			builtins = append(builtins, a)
		}
	}
	for _, mode := range []gate.Mode{gate.ModeAdded, gate.ModeFile, gate.ModeNoFilter} {
		rep := review(t, e, dir, Options{FilterMode: mode, Builtins: builtins})
		counts[mode] = rep.Summary.Reported
		if rep.Summary.Reported+rep.Summary.Suppressed+rep.Summary.OutsideDiff != len(rep.Findings) {
			t.Errorf("%s: summary %+v vs %d findings", mode, rep.Summary, len(rep.Findings))
		}
		if mode == gate.ModeFile {
			// import subprocess (B404) sits on an unchanged line of a changed file.
			if !reported(rep)[at{"bandit", "B404", "app/jobs.py", 3}] {
				t.Errorf("file mode should report B404 on the unchanged import: %v", reported(rep))
			}
		}
		if mode == gate.ModeNoFilter {
			total = len(rep.Findings)
		}
	}
	if !(counts[gate.ModeAdded] < counts[gate.ModeFile] && counts[gate.ModeFile] <= counts[gate.ModeNoFilter] && counts[gate.ModeNoFilter] == total) {
		t.Errorf("counts %v total %d", counts, total)
	}
}

// TestReviewHostileRepo: a symlink to /etc/passwd, a 50 MB file and 10,000
// files. The review completes, analyzes what it can, and says what it skipped.
func TestReviewHostileRepo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 50 MB repository")
	}
	e := newEngine(t)
	r := newGitRepo(t, "hostile")
	dir := r.dir
	r.commit("base", map[string]string{"README.md": "base\n"})
	r.branch("feature")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.sh")); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("echo $x # padding line for a large text file\n"), 50<<20/46)
	if err := os.WriteFile(filepath.Join(dir, "big.sh"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10_000; i++ {
		sub := filepath.Join(dir, "many", strconv.Itoa(i%100))
		_ = os.MkdirAll(sub, 0o755)
		if err := os.WriteFile(filepath.Join(sub, "f"+strconv.Itoa(i)+".txt"), []byte("file "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\ncd $1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.commit("hostile", nil)
	rep := review(t, e, dir, Options{})
	if !reported(rep)[at{"shellcheck", "SC2164", "run.sh", 2}] {
		t.Errorf("the ordinary script was not analysed: %v", reported(rep))
	}
	if rep.Snapshot.Skipped[ReasonSymlink] != 1 || rep.Snapshot.Skipped[ReasonTooLarge] != 1 {
		t.Errorf("skipped %v", rep.Snapshot.Skipped)
	}
	if rep.Snapshot.Files < 10_000 {
		t.Errorf("snapshot has %d files", rep.Snapshot.Files)
	}
	omitted := map[string]string{}
	for _, o := range rep.Files.Omitted {
		omitted[o.Path] = o.Reason
	}
	if omitted["big.sh"] == "" || omitted["passwd.sh"] == "" {
		t.Errorf("omitted %v", omitted)
	}
	for _, f := range rep.Findings {
		if f.Path == "passwd.sh" || strings.Contains(f.Message, "root:") {
			t.Errorf("a finding from the symlink target: %+v", f)
		}
	}
	for _, a := range rep.Analyzers {
		if a.Status != gate.StatusOK && a.Status != gate.StatusSkipped {
			t.Errorf("analyzer %s %s: %s %s", a.Name, a.Status, a.Reason, a.Stderr)
		}
	}
	var md bytes.Buffer
	_ = WriteMarkdown(&md, rep)
	if !strings.Contains(md.String(), "symlink") || !strings.Contains(md.String(), "too large") {
		t.Errorf("markdown does not say what was skipped:\n%s", md.String())
	}
}

// TestReviewTests runs a failing Go test through the test step.
func TestReviewTests(t *testing.T) {
	e := newEngine(t)
	dir := baseAndFeature(t, "gotests", map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.19\n",
		"m.go":   "package m\n\nfunc Add(a, b int) int { return a + b }\n",
	}, map[string]string{
		"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 5 {\n\t\tt.Fatal(\"2+2 is not 5\")\n\t}\n}\n\nfunc TestOK(t *testing.T) {}\n",
	})
	rep := review(t, e, dir, Options{Tests: e.tests})
	if rep.Tests == nil || rep.Tests.Status != TestsFailed || rep.Tests.Summary.Failed != 1 || rep.Tests.Summary.Passed != 1 {
		t.Fatalf("tests %+v", rep.Tests)
	}
	if rep.Conclusion != Failure {
		t.Errorf("conclusion %s with failing tests", rep.Conclusion)
	}
}

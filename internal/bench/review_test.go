package bench_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/asterhq/aster/internal/bench"
	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// gitRepo runs git in dir with a fixed identity and no background upkeep.
func gitRepo(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir, "-c", "gc.auto=0", "-c", "maintenance.auto=false",
		"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// makeBundle writes a repository whose commits add files (one map per
// commit, path → content) and bundles it as corpus/name.bundle.
func makeBundle(t *testing.T, corpus, name string, commits ...map[string]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, dir, "init", "-q", "-b", "main")
	gitRepo(t, dir, "config", "gc.auto", "0")
	for i, files := range commits {
		for p, body := range files {
			full := filepath.Join(dir, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitRepo(t, dir, "add", "-A")
		gitRepo(t, dir, "commit", "-q", "-m", "commit "+string(rune('1'+i)))
	}
	gitRepo(t, dir, "bundle", "create", "-q", filepath.Join(corpus, name+bench.BundleSuffix), "--all")
}

// script has unchecked cd commands ShellCheck warns about (SC2164) on lines 3 and 4.
const script = "#!/bin/sh\nset -u\ncd $1\ncd $2\necho finished\n"

func TestPrepareChange(t *testing.T) {
	corpus := t.TempDir()
	makeBundle(t, corpus, "two", map[string]string{"README": "x\n"}, map[string]string{"run.sh": script})
	makeBundle(t, corpus, "hist", map[string]string{"README": "x\n"}, map[string]string{"a.sh": script}, map[string]string{"b.txt": "b\n"})
	names, err := bench.CorpusRepos(corpus)
	if err != nil || strings.Join(names, ",") != "hist,two" {
		t.Fatalf("repos %v %v", names, err)
	}

	ch, st, err := bench.PrepareChange(t.Context(), filepath.Join(corpus, "two.bundle"), filepath.Join(t.TempDir(), "two"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != bench.ChangeCommit || st.Files != 1 || st.Added != 5 || st.Deleted != 0 || ch.Diff[0].Path() != "run.sh" {
		t.Fatalf("two: %+v", st)
	}

	// Three commits: the whole head tree, every line added.
	ch, st, err = bench.PrepareChange(t.Context(), filepath.Join(corpus, "hist.bundle"), filepath.Join(t.TempDir(), "hist"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range ch.Diff {
		paths = append(paths, f.Path())
		if f.Status != diff.StatusAdded {
			t.Errorf("%s: %s", f.Path(), f.Status)
		}
	}
	if st.Kind != bench.ChangeTree || strings.Join(paths, ",") != "README,a.sh,b.txt" || st.Added != 7 {
		t.Fatalf("hist: %+v %v", st, paths)
	}
	if len(ch.Uncommitted) != 0 {
		t.Errorf("uncommitted %v", ch.Uncommitted)
	}
}

// TestPrepareLast reviews a bundle's last commits as one change: the tip
// against its nth first-parent ancestor, and says so when history is short.
func TestPrepareLast(t *testing.T) {
	corpus := t.TempDir()
	makeBundle(t, corpus, "hist", map[string]string{"README": "x\n"}, map[string]string{"a.sh": script},
		map[string]string{"b.txt": "b\n"}, map[string]string{"README": "y\n"})
	bundle := filepath.Join(corpus, "hist.bundle")
	ch, st, err := bench.PrepareLast(t.Context(), bundle, filepath.Join(t.TempDir(), "hist"), 2)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range ch.Diff {
		paths = append(paths, f.Path()+" "+string(f.Status))
	}
	if st.Kind != bench.ChangeLast || st.Files != 2 || st.Added != 2 || st.Deleted != 1 || st.Base == st.Head {
		t.Fatalf("last 2: %+v %v", st, paths)
	}
	if strings.Join(paths, ",") != "README modified,b.txt added" {
		t.Fatalf("last 2: %v", paths)
	}
	if _, _, err := bench.PrepareLast(t.Context(), bundle, filepath.Join(t.TempDir(), "short"), 4); err == nil ||
		!strings.Contains(err.Error(), "fewer than 5 first-parent commits") {
		t.Fatalf("last 4 of 4 commits: %v", err)
	}
	if _, _, err := bench.PrepareLast(t.Context(), bundle, filepath.Join(t.TempDir(), "zero"), 0); err == nil {
		t.Fatal("last 0: no error")
	}
}

// TestRunReviewRecall runs the real gate, in real sandboxes, over a small
// synthetic corpus and checks the recall counts: one expected finding is on
// a line ShellCheck reports, one on a line nothing reports, and one
// reported finding is on no expected entry.
func TestRunReviewRecall(t *testing.T) {
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 4)
	corpus := t.TempDir()
	makeBundle(t, corpus, "two", map[string]string{"README": "x\n"}, map[string]string{"run.sh": script})
	makeBundle(t, corpus, "other", map[string]string{"README": "x\n"}, map[string]string{"ok.sh": "#!/bin/sh\necho ok\n"})
	lists := fstest.MapFS{"two.json": {Data: []byte(`[
		{"path":"run.sh","line":3,"cwe":"CWE-78","what":"unquoted argument"},
		{"path":"run.sh","line":5,"cwe":"CWE-78","what":"nothing is wrong here: must be missed"}]`)}}
	rep, err := bench.RunReview(t.Context(), bench.ReviewConfig{
		Corpus: corpus, Repos: []string{"two", "other"}, Expected: lists, TempDir: t.TempDir(),
		Gate: gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image(), Parallel: 4}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repos) != 2 {
		t.Fatalf("repos %+v", rep.Repos)
	}
	two, other := rep.Repos[0], rep.Repos[1]
	if two.Error != "" || other.Error != "" {
		t.Fatalf("errors: %q %q", two.Error, other.Error)
	}
	for _, a := range two.Analyzers {
		if a.Name == "shellcheck" && a.Status != gate.StatusOK {
			t.Fatalf("shellcheck %+v", a)
		}
	}
	rc := two.Recall
	if rc == nil {
		t.Fatal("no recall for a repository with a list")
	}
	if rc.Expected != 2 || rc.Found != 1 || rc.Injections != 2 || rc.InjectionsFound != 1 {
		t.Fatalf("recall %+v", rc)
	}
	if len(rc.Missed) != 1 || rc.Missed[0].Line != 5 || len(rc.OffChange) != 0 {
		t.Fatalf("missed %+v off %+v", rc.Missed, rc.OffChange)
	}
	if len(rc.Matches) != 1 || rc.Matches[0].Analyzer != "shellcheck" {
		t.Fatalf("matches %+v", rc.Matches)
	}
	// Line 4's SC2164 is reported and on no entry.
	if rc.Unexpected < 1 || rc.Unexpected != two.Reported-countOn(two, 3) {
		t.Fatalf("unexpected %d of %d reported: %+v", rc.Unexpected, two.Reported, two.Findings)
	}
	if two.ByAnalyzer["shellcheck"] != two.Reported || two.WallMS <= 0 || two.Change.Kind != bench.ChangeCommit {
		t.Fatalf("two %+v", two)
	}
	if other.Recall != nil {
		t.Errorf("recall without a list: %+v", other.Recall)
	}
	var table strings.Builder
	bench.PrintReviewTable(&table, rep, true)
	if !strings.Contains(table.String(), "| two | ") || !strings.Contains(table.String(), "| 1/2 | 1/2 |") ||
		!strings.Contains(table.String(), "run.sh:5 CWE-78") {
		t.Errorf("table:\n%s", table.String())
	}
}

func countOn(r bench.RepoReview, line int) int {
	n := 0
	for _, f := range r.Findings {
		if f.StartLine == line {
			n++
		}
	}
	return n
}

// TestCorpusExpectedOnChange checks that every entry of the lists kept in the
// tree is on an added line of its corpus repository's change. It needs the
// shared corpus, which lives outside the repository: without it, it skips.
func TestCorpusExpectedOnChange(t *testing.T) {
	corpus := filepath.Join(sandboxtest.RepoRoot(t), "..", "shared", "corpus")
	if _, err := os.Stat(corpus); err != nil {
		t.Skipf("no corpus at %s", corpus)
	}
	for _, name := range []string{"dvpwa", "nodegoat"} {
		list, ok, err := bench.LoadExpected(bench.ExpectedLists(), name)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", name, ok, err)
		}
		ch, _, err := bench.PrepareChange(t.Context(), filepath.Join(corpus, name+bench.BundleSuffix), filepath.Join(t.TempDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		ix := diff.NewIndex(ch.Diff)
		for _, e := range list {
			for n := e.Line; n <= max(e.Line, e.EndLine); n++ {
				if l := ix.Line(e.Path, n); l == nil || l.Kind != diff.Added || strings.TrimSpace(l.Content) == "" {
					t.Errorf("%s: %s: line %d is not a non-blank added line", name, e.Location(), n)
				}
			}
		}
	}
}

// TestPrintReviewTableNoise: a --last run ends with the noise total (a
// repository that failed is counted apart) and each taint engine's cost.
func TestPrintReviewTableNoise(t *testing.T) {
	rep := &bench.ReviewReport{Last: 30, Repos: []bench.RepoReview{
		{Name: "a", Change: bench.ChangeStats{Kind: bench.ChangeLast, Base: strings.Repeat("1", 40), Head: strings.Repeat("2", 40)},
			BySeverity: map[string]int{"error": 1, "warning": 2, "note": 3},
			Analyzers: []gate.AnalyzerResult{{Name: "taint-python", Status: gate.StatusOK,
				Stats: &finding.RunStats{Files: 4, MS: 2000, CPUMS: 1000, MaxRSSKB: 30 << 10, MaxFileMS: 600, Slowest: "x.py"}}}},
		{Name: "b", BySeverity: map[string]int{"warning": 1}},
		{Name: "c", Error: "no history"},
	}}
	var b strings.Builder
	bench.PrintReviewTable(&b, rep, true)
	out := b.String()
	for _, want := range []string{
		"| a | last: 1111111..2222222 |",
		"noise, the last 30 commits of 2 repositories: 1 error(s), 3 warning(s), 3 note(s) reported; 1 repositories not reviewed",
		"a, taint engines: taint-python 4 files in 2.0s (CPU 1.0s, 250 ms a file), 30 MB peak, slowest x.py 600 ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

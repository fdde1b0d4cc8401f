package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/store/storetest"
)

// gitBundle makes a two-commit bundle in a temporary directory: base's files, then
// head's over them.
func gitBundle(t *testing.T, base, head map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@aster.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@aster.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	commit := func(files map[string]string, msg string) {
		t.Helper()
		for p, c := range files {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git("add", "-A")
		git("commit", "-q", "-m", msg)
	}
	git("init", "-q", "-b", "main")
	commit(base, "base")
	commit(head, "head")
	out := filepath.Join(t.TempDir(), "tiny"+BundleSuffix)
	git("bundle", "create", "-q", out, "main")
	return out
}

// The change pool holds the base tree and only the source files the tip modified.
func TestAppChangePool(t *testing.T) {
	b := gitBundle(t,
		map[string]string{"a.py": "x = 1\n", "b.go": "package b\n", "README.md": "# r\n", "same.js": "let a = 1;\n"},
		map[string]string{"a.py": "x = 2\n", "b.go": "package b\n\nvar B = 1\n", "README.md": "# r2\n", "new.py": "y = 1\n"})
	p, err := loadChangePool(t.Context(), []string{b}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.base) != 4 || p.base["tiny/a.py"] != "x = 1\n" {
		t.Errorf("base %v, want the four files of the first commit under tiny/", p.base)
	}
	if len(p.changed) != 2 || p.changed[0].path != "tiny/a.py" || p.changed[1].path != "tiny/b.go" {
		t.Fatalf("changed %+v, want tiny/a.py and tiny/b.go (README is not source, new.py is not a modification)", p.changed)
	}
	if c := p.change(1, 1); c["tiny/b.go"] != "package b\n\nvar B = 1\n" || len(c) != 1 {
		t.Errorf("second pull request of one file: %v, want b.go at its tip", c)
	}
	if c := p.change(0, 5); len(c) != 2 {
		t.Errorf("five files from a pool of two: %v, want the two", c)
	}
	if s := p.sources; len(s) != 1 || s[0].Changed != 2 || s[0].BaseFiles != 4 || s[0].Base == s[0].Tip {
		t.Errorf("sources %+v", s)
	}
}

// TestBenchApp runs the App benchmark for two pull requests of two files on the real
// binary, the real sandbox runtime and the fake GitHub, on SQLite (and on Postgres
// with ASTER_TEST_POSTGRES_URL), and checks the report says what happened.
func TestBenchApp(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Docker engine and builds the binary")
	}
	sandboxtest.Docker(t)
	bin := sandboxtest.AsterBinary(t)
	initBin := sandboxtest.InitBinary(t)
	label := "aster.test=" + sandboxtest.Label(t)
	t.Setenv("ASTER_LABELS", label) // the servers' sandboxes, for the clean-up below
	t.Cleanup(func() {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	b := gitBundle(t,
		map[string]string{"app/views.py": "def index(request):\n    return 'hi'\n", "web/main.js": "function f(a) { return a; }\n"},
		map[string]string{"app/views.py": "import os\n\n\ndef index(request):\n    return os.environ.get('GREETING', 'hi')\n",
			"web/main.js": "function f(a) {\n  return a + 1;\n}\nmodule.exports = f;\n"})
	stores := []AppStore{{Name: "sqlite"}}
	if os.Getenv(storetest.PostgresEnv) != "" {
		stores = append(stores, AppStore{Name: "postgres", URL: storetest.PostgresURL(t)})
	}
	var progressLines strings.Builder
	logs := t.TempDir()
	rep, err := RunApp(t.Context(), AppConfig{Binary: bin, ServeArgs: []string{"--init-path", initBin}, PRs: []int{2}, FilesPerPR: 2,
		Bundles: []string{b}, Stores: stores, TempDir: t.TempDir(), Progress: &progressLines, LogDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress:\n%s", progressLines.String())
	if len(rep.Cells) != len(stores) {
		t.Fatalf("%d cells, want %d", len(rep.Cells), len(stores))
	}
	if len(rep.Sources) != 1 || rep.Sources[0].Changed != 2 {
		t.Errorf("sources %+v, want the bundle with its two changed files", rep.Sources)
	}
	for _, c := range rep.Cells {
		if c.Error != "" {
			t.Errorf("%s: %s", c.Store, c.Error)
			continue
		}
		// --logs: the server's log (it names the reviews) and the unfinished check runs.
		if log, err := os.ReadFile(filepath.Join(logs, "server-"+c.Store+"-2.log")); err != nil || !strings.Contains(string(log), "review finished") {
			t.Errorf("%s: kept server log: %v, %d bytes without a finished review", c.Store, err, len(log))
		}
		if _, err := os.Stat(filepath.Join(logs, "checkruns-"+c.Store+"-2.txt")); err != nil {
			t.Errorf("%s: no kept check runs: %v", c.Store, err)
		}
		if c.Conclusions["success"] != c.Reviewed && len(c.Unfinished) == 0 {
			t.Errorf("%s: conclusions %v but no title of an unfinished review", c.Store, c.Conclusions)
		}
		if c.Twice != 0 {
			t.Errorf("%s: %d pull requests reviewed twice", c.Store, c.Twice)
		}
		if c.Reviewed != 2 || c.FilesPerPR != 2 || c.Latency.N != 2 {
			t.Errorf("%s: %d reviewed of %d files each, %d latencies; want 2, 2, 2", c.Store, c.Reviewed, c.FilesPerPR, c.Latency.N)
		}
		l := c.Latency
		if l.P50MS <= 0 || l.P50MS > l.P95MS || l.P95MS > l.P99MS || l.P99MS > c.MaxMS || c.MaxMS > c.WallMS {
			t.Errorf("%s: latencies p50 %v p95 %v p99 %v max %v wall %v: want 0 < p50 <= p95 <= p99 <= max <= wall", c.Store, l.P50MS, l.P95MS, l.P99MS, c.MaxMS, c.WallMS)
		}
		if c.Wait.N != 2 || c.Review.N != 2 || c.Review.P50MS <= 0 || c.Wait.P50MS < 0 || c.Review.P99MS > c.MaxMS || c.Wait.P99MS > c.MaxMS {
			t.Errorf("%s: queue wait %+v and review %+v: want both pull requests, a review time above 0, each within the longest latency %v",
				c.Store, c.Wait, c.Review, c.MaxMS)
		}
		if c.ReviewsPerMin <= 0 || c.DeliverMS <= 0 {
			t.Errorf("%s: %v reviews a minute, deliveries took %v ms", c.Store, c.ReviewsPerMin, c.DeliverMS)
		}
		if c.IdleRSSBytes <= 0 || c.PeakRSSBytes < c.IdleRSSBytes {
			t.Errorf("%s: RSS idle %d peak %d: want 0 < idle <= peak", c.Store, c.IdleRSSBytes, c.PeakRSSBytes)
		}
		if c.MeanSandboxes <= 0 || c.MeanSandboxes > float64(c.PeakSandboxes) {
			t.Errorf("%s: %v sandboxes on average, peak %d: want above 0, at most the peak", c.Store, c.MeanSandboxes, c.PeakSandboxes)
		}
		if c.SandboxSlots <= 0 || c.PeakSandboxes <= 0 || c.PeakSandboxes > c.SandboxSlots {
			t.Errorf("%s: %d sandboxes at most of %d slots: want at least one, within the slots", c.Store, c.PeakSandboxes, c.SandboxSlots)
		}
		total := 0
		for _, n := range c.Conclusions {
			total += n
		}
		if total != c.Reviewed {
			t.Errorf("%s: conclusions %v for %d reviews", c.Store, c.Conclusions, c.Reviewed)
		}
	}
	if !strings.Contains(progressLines.String(), "2 reviewed") {
		t.Errorf("no progress line with the reviews:\n%s", progressLines.String())
	}
}

// The table has a row per cell, the numbers in seconds and MiB, and a failed cell's reason.
func TestPrintApp(t *testing.T) {
	rep := &AppReport{Cores: 2, LoadBefore: []float64{1, 2, 3}, Sources: []AppSource{{Bundle: "flask.bundle", Base: "abc", Tip: "def", BaseFiles: 247, Changed: 44}},
		Cells: []AppCell{
			{Store: "sqlite", PRs: 10, FilesPerPR: 20, DeliverMS: 59.5, Reviewed: 10, Latency: PhaseStats{N: 10, P50MS: 1500, P95MS: 2500, P99MS: 3500}, MaxMS: 3600,
				Wait: PhaseStats{P50MS: 500}, Review: PhaseStats{P50MS: 1000, P95MS: 1200}, ReviewsPerMin: 1.69, IdleRSSBytes: 90 << 20, PeakRSSBytes: 124 << 20, PeakSandboxes: 8, SandboxSlots: 8},
			{Store: "postgres", PRs: 10, FilesPerPR: 20, Error: "aster app serve exited before it answered /healthz\nlast lines"},
			{Store: "postgres", PRs: 50, FilesPerPR: 20, Reviewed: 50, Conclusions: map[string]int{"success": 30, "neutral": 20},
				Unfinished: []string{"Review incomplete: bandit timed out"}},
		}}
	var b strings.Builder
	PrintApp(&b, rep)
	out := b.String()
	for _, want := range []string{"flask.bundle: base abc (247 files), tip def (44 source files changed)", "1.5", "2.5", "3.5", "1.69", "124", "failed",
		"postgres, 10 pull requests: aster app serve exited before it answered /healthz\n", "postgres, 50 pull requests: check runs 20 neutral, 30 success", `"Review incomplete: bandit timed out"`} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "last lines") {
		t.Errorf("table has the server's log, not only the error's first line:\n%s", out)
	}
}

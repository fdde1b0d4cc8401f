package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--systems", "nope"},
		{"bench", "--jobs", "ruby"},
		{"bench", "--concurrency", "0"},
	} {
		var out, errb bytes.Buffer
		code := Run(t.Context(), args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errb.String())
		}
	}
}

func TestBenchReviewFlags(t *testing.T) {
	corpus := t.TempDir()
	if err := os.WriteFile(filepath.Join(corpus, "one.bundle"), []byte("not a bundle"), 0o644); err != nil {
		t.Fatal(err)
	}
	badList := t.TempDir()
	if err := os.WriteFile(filepath.Join(badList, "one.json"), []byte(`[{"path":"/abs","line":1,"cwe":"CWE-1","what":"x"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"bench", "review", "--json", "--markdown", "--corpus", corpus},
		{"bench", "review", "--corpus", filepath.Join(corpus, "nope")},
		{"bench", "review", "--corpus", t.TempDir()},
		{"bench", "review", "--corpus", corpus, "--repo", "two"},
		{"bench", "review", "--corpus", corpus, "--expected", filepath.Join(corpus, "one.bundle")},
		{"bench", "review", "--corpus", corpus, "--expected", badList},
		{"bench", "review", "--corpus", corpus, "--parallel", "0"},
	} {
		var out, errb bytes.Buffer
		code := Run(t.Context(), args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errb.String())
		}
	}
}

// Without --corpus and with no corpus next to the checkout, the benchmark
// says it skipped and succeeds, before it needs any engine.
func TestBenchReviewNoCorpusSkips(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	code := Run(t.Context(), []string{"bench", "review"}, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != 0 || !strings.Contains(errb.String(), "skipped: no corpus") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

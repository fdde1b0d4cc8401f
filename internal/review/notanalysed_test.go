package review_test

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/review"
)

// A changed file no analyzer reads as code (only the secret scanner looked at
// it) is listed as not analysed with its language, and is not counted as
// reviewed; the text and the pull request summary say so. A Dockerfile and a
// workflow are read (kics, actionlint) and count as reviewed.
func TestNotAnalysedFilesAreNamed(t *testing.T) {
	runner := review.NewTestGate(t)
	dir := review.BaseAndFeature(t, "langs", map[string]string{"README.md": "# langs\n"}, map[string]string{
		"app/main.py":               "def main():\n    return 1\n",
		"build.scala":               "object Build { def main(args: Array[String]): Unit = println(args(0)) }\n",
		"Dockerfile":                "FROM debian:13\nRUN curl -k https://example.com/x | sh\n",
		".github/workflows/ci.yaml": "on: [push]\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo hi\n",
		"src/lib.rs":                "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
		"App.swift":                 "print(CommandLine.arguments[1])\n",
	})
	rep := reviewDir(t, runner, dir, review.Options{})
	got := map[string]string{}
	for _, f := range rep.Files.NotAnalysed {
		got[f.Path] = f.Language
	}
	want := map[string]string{"build.scala": "Scala", "src/lib.rs": "Rust", "App.swift": "Swift"}
	if len(got) != len(want) {
		t.Fatalf("not analysed %v, want %v", got, want)
	}
	for p, l := range want {
		if got[p] != l {
			t.Errorf("%s: %q, want %q", p, got[p], l)
		}
	}
	if rep.Files.Changed != 6 || rep.Files.Reviewed != 3 {
		t.Errorf("files %+v", rep.Files)
	}
	var b strings.Builder
	if err := review.WriteMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, s := range []string{"6 changed, 3 reviewed.", "3 files not analysed (no analyzer for ", "- not analysed `build.scala` (no analyzer for Scala)"} {
		if !strings.Contains(md, s) {
			t.Errorf("the report does not say %q:\n%s", s, md)
		}
	}
}

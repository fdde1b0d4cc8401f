package diff

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/testkit"
)

// TestGolden parses every testdata/*.diff (real git output, see gen.sh) and
// compares the result with its .golden.json.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.diff")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			b, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			files, err := Parse(bytes.NewReader(b), Options{})
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			testkit.Golden(t, strings.TrimSuffix(in, ".diff")+".golden.json", files, "go generate ./internal/diff")
		})
	}
}

func parseFile(t *testing.T, name string) []*File {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Parse(bytes.NewReader(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func byPath(files []*File) map[string]*File {
	m := map[string]*File{}
	for _, f := range files {
		m[f.Path()] = f
	}
	return m
}

// TestAllKinds checks the facts the rest of Aster relies on, independently of
// the golden files.
func TestAllKinds(t *testing.T) {
	files := byPath(parseFile(t, "all.diff"))
	type want struct {
		status   Status
		oldPath  string
		added    []int
		hunk     []int
		binary   bool
		oldMode  string
		newMode  string
		simil    int
		nHunks   int
		lastNoNL bool
	}
	cases := map[string]want{
		"added.txt":      {status: StatusAdded, added: []int{1, 2, 3}, hunk: []int{1, 2, 3}, newMode: "100644", nHunks: 1},
		"blob.bin":       {status: StatusModified, oldPath: "blob.bin", binary: true, oldMode: "100644", newMode: "100644"},
		"café.txt":       {status: StatusAdded, added: []int{1}, hunk: []int{1}, newMode: "100644", nHunks: 1},
		"crlf.txt":       {status: StatusModified, oldPath: "crlf.txt", added: []int{2}, hunk: []int{1, 2, 3}, oldMode: "100644", newMode: "100644", nHunks: 1},
		"empty.txt":      {status: StatusAdded, newMode: "100644"},
		"gone.txt":       {status: StatusDeleted, oldPath: "gone.txt", oldMode: "100644", nHunks: 1},
		"lines.txt":      {status: StatusModified, oldPath: "lines.txt", added: []int{3, 11}, hunk: []int{1, 2, 3, 4, 5, 6, 8, 9, 10, 11}, oldMode: "100644", newMode: "100644", nHunks: 2},
		"main.go":        {status: StatusModified, oldPath: "main.go", added: []int{3, 4, 7}, hunk: []int{1, 2, 3, 4, 5, 6, 7, 8}, oldMode: "100644", newMode: "100644", nHunks: 1},
		"noeol.txt":      {status: StatusModified, oldPath: "noeol.txt", added: []int{1}, hunk: []int{1}, oldMode: "100644", newMode: "100644", nHunks: 1, lastNoNL: true},
		"renamed.txt":    {status: StatusRenamed, oldPath: "rename-me.txt", added: []int{20}, hunk: []int{17, 18, 19, 20, 21, 22, 23}, oldMode: "100644", newMode: "100644", simil: 96, nHunks: 1},
		"run.sh":         {status: StatusModified, oldPath: "run.sh", oldMode: "100644", newMode: "100755"},
		"with space.txt": {status: StatusModified, oldPath: "with space.txt", added: []int{1}, hunk: []int{1}, oldMode: "100644", newMode: "100644", nHunks: 1},
	}
	if len(files) != len(cases) {
		t.Errorf("parsed %d files, want %d: %v", len(files), len(cases), NewIndex(parseFile(t, "all.diff")).Paths())
	}
	for path, w := range cases {
		f := files[path]
		if f == nil {
			t.Errorf("%s: missing", path)
			continue
		}
		got := want{status: f.Status, oldPath: f.OldPath, added: f.AddedLines(), hunk: f.HunkLines(), binary: f.Binary,
			oldMode: f.OldMode, newMode: f.NewMode, simil: f.Similarity, nHunks: len(f.Hunks)}
		if n := len(f.Hunks); n > 0 {
			ls := f.Hunks[n-1].Lines
			got.lastNoNL = ls[len(ls)-1].NoNewline
		}
		if d := cmp.Diff(w, got, cmp.AllowUnexported(want{})); d != "" {
			t.Errorf("%s (-want +got):\n%s", path, d)
		}
	}
	if c := files["crlf.txt"].Hunks[0].Lines[2].Content; c != "crlf 2" {
		t.Errorf("CRLF content = %q, want the line without its terminator", c)
	}
	if l := files["noeol.txt"].Hunks[0].Lines[0]; l.Kind != Deleted || !l.NoNewline {
		t.Errorf("old side of noeol.txt: %+v, want a deleted line marked NoNewline", l)
	}
}

func TestIndex(t *testing.T) {
	ix := NewIndex(parseFile(t, "all.diff"))
	if l := ix.Line("lines.txt", 11); l == nil || l.Kind != Added || l.Content != "eleven" {
		t.Errorf("lines.txt:11 = %+v", l)
	}
	if l := ix.Line("lines.txt", 7); l != nil {
		t.Errorf("lines.txt:7 is between hunks, got %+v", l)
	}
	if l := ix.Line("lines.txt", 4); l == nil || l.Kind != Context || l.OldLine != 4 {
		t.Errorf("lines.txt:4 = %+v", l)
	}
	if f := ix.File("nothere.txt"); f != nil {
		t.Errorf("unexpected file %+v", f)
	}
	if f := ix.File("gone.txt"); f == nil || f.Status != StatusDeleted {
		t.Errorf("deleted file not indexed by its old path: %+v", f)
	}
}

func TestFormatPatchSkipsPreamble(t *testing.T) {
	files := byPath(parseFile(t, "format-patch.diff"))
	if len(files) != 2 || files["main.go"] == nil || files["added.txt"] == nil {
		t.Fatalf("files = %v", files)
	}
	// The "-- " signature line after the last hunk must not become a line.
	if got := files["main.go"].AddedLines(); !cmp.Equal(got, []int{3, 4, 7}) {
		t.Errorf("main.go added = %v", got)
	}
}

func TestUnified0(t *testing.T) {
	files := byPath(parseFile(t, "unified0.diff"))
	if got := files["lines.txt"].AddedLines(); !cmp.Equal(got, []int{3, 11}) {
		t.Errorf("added = %v", got)
	}
	if got := files["lines.txt"].HunkLines(); !cmp.Equal(got, []int{3, 11}) {
		t.Errorf("with -U0 the hunks hold only changed lines, got %v", got)
	}
}

func TestPlainUnifiedDiff(t *testing.T) {
	in := "--- old/a.txt\t2024-01-01 00:00:00 +0000\n+++ new/a.txt\t2024-01-02 00:00:00 +0000\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n--- /dev/null\n+++ b.txt\n@@ -0,0 +1 @@\n+new\n"
	files, err := ParseString(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("got %d files", len(files))
	}
	if f := files[0]; f.OldPath != "old/a.txt" || f.NewPath != "new/a.txt" || !cmp.Equal(f.AddedLines(), []int{2}) {
		t.Errorf("first file %+v", f)
	}
	if f := files[1]; f.Status != StatusAdded || f.NewPath != "b.txt" {
		t.Errorf("second file %+v", f)
	}
}

func TestQuotedNames(t *testing.T) {
	cases := []struct{ header, old, new string }{
		{`a/x b/x`, "a/x", "b/x"},
		{`a/with space b/with space`, "a/with space", "b/with space"},
		{`"a/tab\there" "b/tab\there"`, "a/tab\there", "b/tab\there"},
		{`"a/caf\303\251" "b/caf\303\251"`, "a/café", "b/café"},
		{`a/plain "b/quo\"te"`, "a/plain", `b/quo"te`},
	}
	for _, c := range cases {
		o, n := splitGitHeader(c.header)
		if o != c.old || n != c.new {
			t.Errorf("splitGitHeader(%q) = %q, %q; want %q, %q", c.header, o, n, c.old, c.new)
		}
	}
}

func TestMalformed(t *testing.T) {
	cases := map[string]string{
		"hunk before file":   "@@ -1 +1 @@\n-a\n+b\n",
		"bad hunk header":    "--- a/x\n+++ b/x\n@@ -a +1 @@\n",
		"hunk ends early":    "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n",
		"garbage in hunk":    "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n?b\n",
		"combined diff":      "diff --cc x\n",
		"both sides devnull": "--- /dev/null\n+++ /dev/null\n",
		"line zero start":    "--- a/x\n+++ b/x\n@@ -0,1 +1 @@\n-a\n+b\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseString(in)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
	// Trailing text after the last hunk ("-- " signature) is not an error.
	if _, err := ParseString("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n-- \n2.40.0\n"); err != nil {
		t.Errorf("format-patch trailer: %v", err)
	}
	if files, err := ParseString("just some text\nnot a diff\n"); err != nil || len(files) != 0 {
		t.Errorf("non-diff text: %v, %v", files, err)
	}
}

func TestCaps(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 5; i++ {
		b.WriteString("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n")
	}
	files, err := Parse(strings.NewReader(b.String()), Options{MaxFiles: 3})
	if !errors.Is(err, ErrTooLarge) || len(files) != 3 {
		t.Errorf("MaxFiles: %d files, err %v", len(files), err)
	}
	if _, err := Parse(strings.NewReader(b.String()), Options{MaxBytes: 100}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("MaxBytes: err %v", err)
	}

	// A file over the per-file cap keeps its first lines, is marked, and the
	// files after it are still parsed.
	var big strings.Builder
	big.WriteString("diff --git a/big b/big\n--- a/big\n+++ b/big\n@@ -0,0 +1,1000 @@\n")
	for i := 0; i < 1000; i++ {
		big.WriteString("+" + strings.Repeat("x", 99) + "\n")
	}
	big.WriteString("diff --git a/small b/small\n--- a/small\n+++ b/small\n@@ -1 +1 @@\n-a\n+b\n")
	files, err = Parse(strings.NewReader(big.String()), Options{MaxFileBytes: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || !files[0].Truncated || files[1].Truncated {
		t.Fatalf("files = %+v", files)
	}
	if n := len(files[0].AddedLines()); n == 0 || n >= 1000 {
		t.Errorf("truncated file kept %d lines", n)
	}
	if got := files[1].AddedLines(); !cmp.Equal(got, []int{1}) {
		t.Errorf("file after the big one: %v", got)
	}

	// A very long line is cut, not held whole.
	long := "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+" + strings.Repeat("y", 1<<20) + "\n"
	files, err = Parse(strings.NewReader(long), Options{MaxLineBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(files[0].Hunks[0].Lines[0].Content); n > 1000 {
		t.Errorf("line content kept %d bytes", n)
	}

	// The cut falls on a character boundary: a two-byte "é" straddling the
	// cap is dropped whole, not split into an invalid byte.
	accented := "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+" + strings.Repeat("y", 998) + "éé\n"
	files, err = Parse(strings.NewReader(accented), Options{MaxLineBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if c := files[0].Hunks[0].Lines[0].Content; !utf8.ValidString(c) || c != strings.Repeat("y", 998) {
		t.Errorf("cut line: %d bytes, valid UTF-8 %v, ends %q", len(c), utf8.ValidString(c), c[max(len(c)-4, 0):])
	}
}

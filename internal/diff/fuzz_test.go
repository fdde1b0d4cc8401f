package diff

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that no input panics, that errors are classified, and that
// every kept line number lies inside its hunk's declared range.
func FuzzParse(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/*.diff")
	for _, in := range inputs {
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n\\ No newline at end of file\n-b\n+c\n"))
	f.Add([]byte("diff --git \"a/\\303\" b/x\nrename from \"\\1\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := Parse(bytes.NewReader(data), Options{MaxFileBytes: 1 << 12, MaxLineBytes: 256})
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		for _, file := range files {
			for _, h := range file.Hunks {
				for _, l := range h.Lines {
					if l.NewLine != 0 && (l.NewLine < h.NewStart || l.NewLine >= h.NewStart+h.NewLines) {
						t.Fatalf("new line %d outside hunk +%d,%d", l.NewLine, h.NewStart, h.NewLines)
					}
					if l.OldLine != 0 && (l.OldLine < h.OldStart || l.OldLine >= h.OldStart+h.OldLines) {
						t.Fatalf("old line %d outside hunk -%d,%d", l.OldLine, h.OldStart, h.OldLines)
					}
					if len(l.Content) > 256 {
						t.Fatalf("content of %d bytes past the cap", len(l.Content))
					}
					if utf8.Valid(data) && !utf8.ValidString(l.Content) {
						t.Fatalf("valid input, invalid content %q: a cut split a character", l.Content)
					}
				}
			}
			_ = NewIndex(files)
		}
	})
}

// Package textclip shortens text to a byte budget without cutting a UTF-8
// character in two: Head keeps the start, Tail the end. It is the one clipping
// of error texts, log fields, report lines and test output; the review
// stack's safetext.Cut, Tail and Clip are these with or without a mark.
package textclip

import (
	"strings"
	"unicode/utf8"
)

// Head returns s if it is at most n bytes long, else its first n bytes at most,
// cut on a character boundary, followed by mark (which is not counted in n).
func Head(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	// Step back over the character the cut would split: a UTF-8 character
	// has at most utf8.UTFMax-1 continuation bytes, so invalid input costs
	// no more than that.
	for back := 0; back < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(s[cut]); back++ {
		cut--
	}
	return s[:cut] + mark
}

// Tail returns s if it is at most n bytes long, else mark followed by its last
// n bytes at most, cut on a character boundary (mark is not counted in n).
func Tail(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - max(n, 0)
	for fwd := 0; fwd < utf8.UTFMax-1 && cut < len(s) && !utf8.RuneStart(s[cut]); fwd++ {
		cut++
	}
	return mark + s[cut:]
}

// OneLine folds s onto one line (runs of white space, newlines included,
// become one space) and keeps at most its first n bytes, marking a cut with
// "…" (n <= 0: no cap): a tool's or an engine's message fit for a log field
// or a status line. It is the one folding of the tree; callers name their cap.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if n <= 0 {
		return s
	}
	return Head(s, n, "…")
}

// HeadWriter is an io.Writer that keeps the first Max bytes written to it and
// drops the rest, reporting every write as complete: the capped stderr of a
// child process, which must neither block nor fail on the cap.
type HeadWriter struct {
	Max int
	b   []byte // at most Max+1 bytes: the one past Max tells String where a character starts
}

// Write keeps what fits and drops the rest.
func (w *HeadWriter) Write(p []byte) (int, error) {
	if room := w.Max + 1 - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns the first Max bytes at most of what was written, cut on a
// character boundary.
func (w *HeadWriter) String() string {
	return Head(string(w.b), w.Max, "")
}

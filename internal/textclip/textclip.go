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
// "…": a tool's or an engine's message fit for a log field or a status line.
func OneLine(s string, n int) string {
	return Head(strings.Join(strings.Fields(s), " "), n, "…")
}

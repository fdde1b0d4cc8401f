// Package safetext is the one text-safety layer of a review: what decides that a character
// is invisible, how text is cut without splitting a character, how untrusted text becomes
// inert Markdown (Escape, Code), how model-written Markdown is made safe to post (Sanitize)
// and how secrets are removed (Redactor). Everything Aster shows of a repository, a pull
// request or a model goes through it, on the terminal and on GitHub alike.
package safetext

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/asterhq/aster/internal/textclip"
)

// Hidden reports control characters and characters that change or hide text without
// showing: zero-width and bidi controls, the soft hyphen, variation selectors, tag
// characters and every other format (Cf) character. Tab and newline are controls too:
// callers that keep them test for them first.
func Hidden(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2060 && r <= 0x206f,
		r == 0xfeff, r == 0x00ad, r == 0x061c, r == 0x180e, r == 0x034f, r >= 0xfe00 && r <= 0xfe0f,
		r >= 0xe0000 && r <= 0xe007f, r >= 0xfff9 && r <= 0xfffb:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// Clean drops every Hidden character but tab and newline, and makes s valid UTF-8.
func Clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && Hidden(r) {
			return -1
		}
		return r
	}, s)
}

// Cut returns at most n bytes of s, cut at a rune boundary (textclip.Head
// without a mark: the one rune-safe cut of the tree).
func Cut(s string, n int) string { return textclip.Head(s, n, "") }

// Tail returns at most the last n bytes of s, cut at a rune boundary.
func Tail(s string, n int) string { return textclip.Tail(s, n, "") }

// Clip is Cut that says so: when s is longer than n bytes, its first n (at a rune
// boundary) followed by "…"; n <= 0 means no cap.
func Clip(s string, n int) string {
	if n <= 0 {
		return s
	}
	return textclip.Head(s, n, "…")
}

const zwsp = "\u200b"

// asterMarker matches every hidden marker Aster reads back from its own comments
// (<!-- aster:summary -->, <!-- aster:fp=… -->), so text from elsewhere (a model's output, an
// analyzer's message, a quoted comment) cannot smuggle one in.
var asterMarker = regexp.MustCompile(`<!--\s*aster:[^>]*-->`)

// StripMarkers removes every Aster marker from s.
func StripMarkers(s string) string { return asterMarker.ReplaceAllString(s, "") }

var (
	mentionRE = regexp.MustCompile(`(^|[^A-Za-z0-9_` + "`" + `])@([A-Za-z0-9])`)
	schemeRE  = regexp.MustCompile(`(?i)\b(https?|ftp|file|javascript|data|mailto)(:)`)
	wwwRE     = regexp.MustCompile(`(?i)\bwww\.`)
)

// Escape renders untrusted text (a file name, an analyzer's message, a note) as inert
// Markdown on one line, at most maxChars bytes before escaping (0: no cap): hidden
// characters dropped, every markup character escaped, mentions and commands broken, URLs
// not auto-linked, Aster's markers removed.
func Escape(s string, maxChars int) string {
	s = textclip.OneLine(StripMarkers(Clean(s)), maxChars)
	s = schemeRE.ReplaceAllString(s, "$1"+zwsp+"$2")
	var b strings.Builder
	for i, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '!', '#', '~', '&':
			b.WriteByte('\\')
		case '-', '+', '=', '.', ')':
			// Markup only at the start of a line (a list, a heading underline, "1.").
			if i == 0 || (r == '.' || r == ')') && i > 0 && i < 10 && allDigits(s[:i]) {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
	}
	out := mentionRE.ReplaceAllString(b.String(), "$1@"+zwsp+"$2")
	out = wwwRE.ReplaceAllStringFunc(out, func(m string) string { return m[:3] + zwsp + m[3:] })
	if strings.HasPrefix(out, "/") {
		out = zwsp + out
	}
	return out
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Code renders untrusted text as an inline code span on one line (file names, rule ids),
// at most maxChars bytes of it (0: no cap); "|" is escaped, since tables split on it even
// inside code spans.
func Code(s string, maxChars int) string {
	s = textclip.OneLine(StripMarkers(Clean(s)), maxChars)
	s = strings.ReplaceAll(s, "|", `\|`)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

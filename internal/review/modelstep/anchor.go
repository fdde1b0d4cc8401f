package modelstep

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/asterhq/aster/internal/diff"
)

// anchored is where a model comment lands, or why it cannot.
type anchored struct {
	path    string
	line    int
	endLine int
	// moved is set when the quote put the comment on another line than the
	// model's number; endDropped when its range could not be kept.
	moved      bool
	endDropped bool
	// code is the diff line's content at line, for the fingerprint.
	code   string
	reason string // non-empty: dropped
}

// anchorComment places a comment on a line inside a hunk of the diff. The
// model's line number is kept when that line is in a hunk and matches the
// quoted code (or there is no quote); otherwise the quoted code is looked
// up among the file's hunk lines, nearest to the given number. A comment
// whose path is not in the diff, or whose line and quote both miss, is
// dropped with the reason.
func anchorComment(ix *diff.Index, c modelComment) anchored {
	p := resolvePath(ix, c.Path)
	if p == "" {
		return anchored{reason: "path is not in the reviewed diff"}
	}
	f := ix.File(p)
	if f == nil || len(f.Hunks) == 0 {
		return anchored{path: p, reason: "file has no lines to comment on"}
	}
	quote := firstCodeLine(c.Quote)
	a := anchored{path: p}
	if l := ix.Line(p, c.Line); l != nil && (quote == "" || sameCode(l.Content, quote)) {
		a.line, a.code = c.Line, l.Content
	} else if quote != "" {
		n, content := findQuote(f, quote, c.Line)
		if n == 0 {
			if ix.Line(p, c.Line) == nil {
				return anchored{path: p, reason: fmt.Sprintf("line %d is outside the diff's hunks and the quoted code is not in them", c.Line)}
			}
			return anchored{path: p, reason: fmt.Sprintf("quoted code is not on line %d nor elsewhere in the diff", c.Line)}
		}
		a.line, a.code, a.moved = n, content, n != c.Line
	} else {
		return anchored{path: p, reason: fmt.Sprintf("line %d is outside the diff's hunks (and no code was quoted)", c.Line)}
	}
	if c.EndLine > 0 && c.EndLine != c.Line {
		end := c.EndLine + (a.line - c.Line)
		if end > a.line && f.SameHunk(a.line, end) {
			a.endLine = end
		} else {
			a.endDropped = true
		}
	}
	return a
}

// resolvePath maps the model's path to one in the diff: exact, then without
// a/ b/ ./ / prefixes, then a unique suffix match on a path boundary.
func resolvePath(ix *diff.Index, p string) string {
	p = strings.TrimSpace(p)
	if p == "" || len(p) > 4096 {
		return ""
	}
	if ix.File(p) != nil {
		return p
	}
	for _, pre := range []string{"./", "a/", "b/", "/"} {
		if q := strings.TrimPrefix(p, pre); q != p && ix.File(q) != nil {
			return q
		}
	}
	var match string
	for _, q := range ix.Paths() {
		if strings.HasSuffix(q, "/"+strings.TrimLeft(p, "/")) {
			if match != "" {
				return "" // ambiguous
			}
			match = q
		}
	}
	return match
}

// firstCodeLine is the first non-blank line of a quote, without a diff
// marker or line number the model may have copied along.
func firstCodeLine(q string) string {
	for _, l := range strings.Split(q, "\n") {
		l = strings.TrimRight(l, " \t\r")
		t := strings.TrimLeft(l, " \t")
		// "  42 + code" or "+code" copied from the prompt.
		if i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) }); i > 0 && i+2 <= len(t) && (t[i:i+2] == " +" || t[i:i+2] == "  ") {
			t = strings.TrimLeft(t[i+2:], " ")
		} else if strings.HasPrefix(t, "+ ") || strings.HasPrefix(t, "+\t") {
			t = t[2:]
		}
		if strings.TrimSpace(t) != "" {
			return t
		}
	}
	return ""
}

// squash removes all white space, so indentation and spacing differences
// between the quote and the code do not matter.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// sameCode reports whether a diff line is the quoted code: equal without
// white space, or (for quotes of 12+ characters) contained in it.
func sameCode(content, quote string) bool {
	c, q := squash(content), squash(quote)
	if q == "" {
		return false
	}
	return c == q || (len(q) >= 12 && strings.Contains(c, q))
}

// findQuote returns the new-side line of f's hunks holding the quote,
// nearest to near; exact matches win over containment.
func findQuote(f *diff.File, quote string, near int) (int, string) {
	q := squash(quote)
	if q == "" {
		return 0, ""
	}
	best, bestContent, bestExact, bestDist := 0, "", false, 0
	for hi := range f.Hunks {
		for _, l := range f.Hunks[hi].Lines {
			if l.NewLine == 0 {
				continue
			}
			c := squash(l.Content)
			exact := c == q
			if !exact && !(len(q) >= 12 && strings.Contains(c, q)) {
				continue
			}
			d := l.NewLine - near
			if d < 0 {
				d = -d
			}
			if best == 0 || (exact && !bestExact) || (exact == bestExact && d < bestDist) {
				best, bestContent, bestExact, bestDist = l.NewLine, l.Content, exact, d
			}
		}
	}
	return best, bestContent
}

package finding

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// gitleaksLeak is one entry of gitleaks' JSON report (an array of them). Of
// the secret itself only Secret is read, and only to be redacted at once.
type gitleaksLeak struct {
	RuleID      string `json:"RuleID"`
	Description string `json:"Description"`
	StartLine   int    `json:"StartLine"`
	EndLine     int    `json:"EndLine"`
	StartColumn int    `json:"StartColumn"`
	EndColumn   int    `json:"EndColumn"`
	Secret      string `json:"Secret"`
	File        string `json:"File"`
}

// ReadGitleaks reads `gitleaks --report-format json` output, one or more
// documents (arrays). Each leak's message says what was found and where: the
// rule's description, a redacted form of the secret (RedactSecret: its first
// characters and its length, never the secret) and file:line. Match and Line,
// which hold the secret, are not read at all.
func ReadGitleaks(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	docs, err := decodeDocuments[[]gitleaksLeak](data, "gitleaks JSON")
	if err != nil {
		return ReadResult{}, err
	}
	for _, doc := range docs {
		for _, l := range doc {
			red := RedactSecret(l.Secret)
			l.Secret = ""
			f := Finding{
				RuleID:      l.RuleID,
				Severity:    Error,
				Path:        l.File,
				StartLine:   l.StartLine,
				StartColumn: l.StartColumn,
				EndLine:     l.EndLine,
				EndColumn:   l.EndColumn,
			}
			if f.EndColumn > 0 {
				f.EndColumn++ // gitleaks' end column is inclusive
			}
			what := strings.TrimSuffix(strings.TrimSpace(l.Description), ".")
			if what == "" {
				what = "A secret matching gitleaks rule " + l.RuleID
			}
			where := Finding{Path: cleanPath(f.Path, c.opts.Root), StartLine: f.StartLine}.Location()
			f.Message = fmt.Sprintf("%s. Found %s at %s.", what, red, where)
			c.add(f)
		}
	}
	return c.result(), nil
}

// RedactSecret describes a secret without revealing it: a PEM block by its
// BEGIN line, anything else by at most its first four characters (fewer for
// short values: never more than a fifth of it), then "…" and its length, as
// in "AKIA…(20 chars)". Characters that are not printable ASCII are not shown.
func RedactSecret(s string) string {
	s = strings.TrimSpace(s)
	n := utf8.RuneCountInString(s)
	if n == 0 {
		return "a secret"
	}
	if strings.HasPrefix(s, "-----BEGIN") {
		head, _, _ := strings.Cut(s, "\n")
		if end := strings.Index(head[5:], "-----"); end >= 0 && isPrintableASCII(head[:end+10]) {
			return head[:end+10] + "…(" + strconv.Itoa(n) + " chars)"
		}
	}
	keep := min(4, n/5)
	var b strings.Builder
	i := 0
	for _, r := range s {
		if i == keep {
			break
		}
		if r > unicode.MaxASCII || !unicode.IsPrint(r) || r == '`' {
			break
		}
		b.WriteRune(r)
		i++
	}
	return b.String() + "…(" + strconv.Itoa(n) + " chars)"
}

func isPrintableASCII(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

package app

import (
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/asterhq/aster/internal/github"
)

// Everything the app posts is built from untrusted text: file names and analyzer messages
// from the repository, the model's comments (already sanitised by the model step, and
// passed through here again). Two treatments:
//
//   - escapeText makes text inert Markdown: every markup character escaped, mentions and
//     commands broken, URLs not auto-linked, control and bidi characters dropped.
//   - sanitizeMarkdown keeps the model's Markdown (code, emphasis, lists) but drops raw
//     HTML, images and links outside the allowlist, and breaks mentions and commands.
//
// Both remove Aster's hidden markers, so posted text cannot forge a fingerprint or the
// summary marker.

const zwsp = "\u200b"

// linkAllowlist are the hosts a posted link may point to.
var linkAllowlist = map[string]bool{
	"github.com": true, "docs.github.com": true, "cwe.mitre.org": true, "owasp.org": true,
	"www.shellcheck.net": true, "github.com:443": true, "bandit.readthedocs.io": true,
	"semgrep.dev": true, "gitleaks.io": true, "pkg.go.dev": true, "go.dev": true, "docs.python.org": true,
}

var (
	mentionRE = regexp.MustCompile(`(^|[^A-Za-z0-9_` + "`" + `])@([A-Za-z0-9])`)
	schemeRE  = regexp.MustCompile(`(?i)\b(https?|ftp|file|javascript|data|mailto)(:)`)
	wwwRE     = regexp.MustCompile(`(?i)\bwww\.`)
)

// cleanRunes drops control characters (but tab and newline), bidi controls and other
// invisible format characters that could hide text from a reader.
func cleanRunes(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r':
			return -1
		case unicode.IsControl(r):
			return -1
		case unicode.Is(unicode.Cf, r): // format: bidi overrides, zero-width joiners, ...
			return -1
		}
		return r
	}, s)
}

// escapeText renders untrusted text as inert Markdown on one line.
func escapeText(s string, maxChars int) string {
	s = github.StripMarkers(cleanRunes(s))
	s = strings.Join(strings.Fields(s), " ")
	if maxChars > 0 && len(s) > maxChars {
		s = cutUTF8(s, maxChars) + "…"
	}
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

// code renders untrusted text as an inline code span (file names, rule ids).
func code(s string, maxChars int) string {
	s = github.StripMarkers(cleanRunes(s))
	s = strings.Join(strings.Fields(s), " ")
	if maxChars > 0 && len(s) > maxChars {
		s = cutUTF8(s, maxChars) + "…"
	}
	s = strings.ReplaceAll(s, "|", `\|`) // tables split on | even inside code spans
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

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

var (
	fenceRE     = regexp.MustCompile("^\\s{0,3}(```+|~~~+)")
	htmlTagRE   = regexp.MustCompile(`<(/?[A-Za-z!?][^>]*)>?`)
	imageRE     = regexp.MustCompile(`!\[([^\]]*)\]\(([^)]*)\)`)
	linkRE      = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]*)[^)]*\)`)
	refDefRE    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*\S+`)
	bareURLRE   = regexp.MustCompile(`(?i)\b(?:https?|ftp)://[^\s<>()]+`)
	commandLine = regexp.MustCompile(`^(\s*(?:>\s*)*)/`)
)

// sanitizeMarkdown keeps a model's Markdown but nothing that could reach out of the comment:
// raw HTML, images, links and bare URLs to hosts outside the allowlist, @-mentions and
// /commands are neutralised; code blocks and spans are left as they are (GitHub renders
// them literally).
func sanitizeMarkdown(s string, maxChars int) string {
	s = github.StripMarkers(cleanRunes(s))
	if maxChars > 0 && len(s) > maxChars {
		s = cutUTF8(s, maxChars) + "\n\n…(cut)"
	}
	lines := strings.Split(s, "\n")
	inFence, fence := false, ""
	for i, line := range lines {
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case !inFence:
				inFence, fence = true, m[1][:1]
			case strings.HasPrefix(strings.TrimSpace(line), strings.Repeat(fence, 3)):
				inFence = false
			}
			continue
		}
		if inFence {
			continue
		}
		lines[i] = sanitizeLine(line)
	}
	if inFence {
		lines = append(lines, strings.Repeat(fence, 3)) // close it, so the rest renders as text
	}
	return strings.Join(lines, "\n")
}

// sanitizeLine treats one line outside code fences, leaving its inline code spans alone.
func sanitizeLine(line string) string {
	if refDefRE.MatchString(line) {
		return escapeText(line, 0)
	}
	var b strings.Builder
	rest := line
	first := true
	for rest != "" {
		i := strings.IndexByte(rest, '`')
		if i < 0 {
			b.WriteString(sanitizeText(rest, first))
			break
		}
		b.WriteString(sanitizeText(rest[:i], first))
		first = false
		n := 0
		for n < len(rest)-i && rest[i+n] == '`' {
			n++
		}
		delim := rest[i : i+n]
		end := strings.Index(rest[i+n:], delim)
		if end < 0 { // an unclosed span is text
			b.WriteString(strings.Repeat("\\`", n))
			rest = rest[i+n:]
			continue
		}
		b.WriteString(rest[i : i+n+end+n])
		rest = rest[i+n+end+n:]
	}
	return b.String()
}

func sanitizeText(s string, lineStart bool) string {
	s = imageRE.ReplaceAllString(s, "$1")
	s = linkRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := linkRE.FindStringSubmatch(m)
		if allowedURL(sub[2]) {
			return m
		}
		return sub[1]
	})
	s = htmlTagRE.ReplaceAllString(s, "&lt;$1&gt;")
	s = bareURLRE.ReplaceAllStringFunc(s, func(u string) string {
		if allowedURL(u) {
			return u
		}
		return schemeRE.ReplaceAllString(u, "$1"+zwsp+"$2")
	})
	s = mentionRE.ReplaceAllString(s, "$1@"+zwsp+"$2")
	if lineStart {
		s = commandLine.ReplaceAllString(s, "$1"+zwsp+"/")
	}
	return s
}

func allowedURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" {
		return false
	}
	return linkAllowlist[strings.ToLower(u.Host)]
}

package safetext

import (
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// SanitizeOptions shape what a model-written body may contain.
type SanitizeOptions struct {
	// AllowedHosts are the hosts links may point to (their subdomains too);
	// every other link is removed. Empty allows none.
	AllowedHosts []string
	// MaxBytes caps the result (0: no cap).
	MaxBytes int
}

// SanitizeStats counts what Sanitize neutralised.
type SanitizeStats struct {
	Images     int  `json:"images,omitempty"`
	Links      int  `json:"links,omitempty"`
	HTML       int  `json:"html,omitempty"`
	Mentions   int  `json:"mentions,omitempty"`
	Commands   int  `json:"commands,omitempty"`
	References int  `json:"references,omitempty"`
	Invisible  int  `json:"invisible,omitempty"`
	Truncated  bool `json:"truncated,omitempty"`
	// NoCodeSpans is set when backticks outside fences had to be flattened.
	NoCodeSpans bool `json:"no_code_spans,omitempty"`
}

// Sanitize makes model-written Markdown safe to post: no images, no raw HTML
// (tags and comments are escaped or removed), no links outside the
// allowlist, no @-mentions or #-references that would notify people or touch
// other issues, no line that a bot would read as a /command, no invisible or
// bidi characters, and at most MaxBytes. Code is kept verbatim: fenced blocks
// are re-fenced so their content cannot close them, and single-line code
// spans (which GitHub renders literally) are left alone.
func Sanitize(s string, o SanitizeOptions) (string, SanitizeStats) {
	out, st := sanitize(s, o, true)
	if !proseSafe(out, o) {
		// Sanitising changed how the text tokenises (a removal joined a
		// backslash to a backtick, or a cut split a code span): start again
		// with no code spans at all, so everything outside fences is prose.
		out, st = sanitize(s, o, false)
		st.NoCodeSpans = true
	}
	return out, st
}

func sanitize(s string, o SanitizeOptions, codeSpans bool) (string, SanitizeStats) {
	var st SanitizeStats
	// Escaping grows text at most a few times; anything far past the cap
	// is cut first so the work stays linear in what can be kept.
	if o.MaxBytes > 0 && len(s) > 8*o.MaxBytes+1024 {
		s = Cut(s, 8*o.MaxBytes+1024)
		st.Truncated = true
	}
	s = cleanText(s, &st)
	var out strings.Builder
	budget := o.MaxBytes
	emit := func(piece string) bool {
		if budget > 0 && out.Len()+len(piece) > budget {
			return false
		}
		out.WriteString(piece)
		return true
	}
	for _, blk := range splitFences(s) {
		var piece string
		if blk.fence {
			piece = renderFence(blk)
		} else {
			text := blk.text
			if !codeSpans {
				text = strings.ReplaceAll(text, "`", "'")
			}
			piece = sanitizeProse(text, o, &st)
		}
		if emit(piece) {
			continue
		}
		// Over the cap: keep what fits of this piece, closed properly.
		st.Truncated = true
		const marker = "\n\n…(truncated)"
		room := budget - out.Len() - len(marker)
		if blk.fence {
			fence := fenceFor(blk.text)
			room -= len(fence) + 1 + len(blk.info) + 1 + len(fence) + 2
			if room > 0 {
				out.WriteString("\n" + fence + blk.info + "\n" + Cut(blk.text, room) + "\n" + fence)
			}
		} else if room > 0 {
			out.WriteString(Cut(piece, room))
		}
		if budget-out.Len() >= len(marker) {
			out.WriteString(marker)
		}
		break
	}
	return strings.TrimRight(out.String(), " \n"), st
}

// cleanText makes s valid UTF-8 with \n line ends, without control, format
// or bidi characters.
func cleanText(s string, st *SanitizeStats) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case Hidden(r):
			st.Invisible++
			return -1
		}
		return r
	}, s)
}

// block is a run of prose or one fenced code block.
type block struct {
	fence bool
	info  string // sanitised info string of a fence
	text  string // fence content without the fence lines
}

var fenceOpen = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")

// splitFences cuts s into prose and fenced code blocks, CommonMark style:
// a fence opens with three or more backticks or tildes indented at most three
// spaces and closes with a line of at least as many of the same character.
// An unclosed fence runs to the end.
func splitFences(s string) []block {
	lines := strings.Split(s, "\n")
	var out []block
	var prose []string
	flush := func() {
		if len(prose) > 0 {
			out = append(out, block{text: strings.Join(prose, "\n") + "\n"})
			prose = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil || (m[1][0] == '`' && strings.Contains(m[2], "`")) {
			prose = append(prose, lines[i])
			continue
		}
		flush()
		char, n := m[1][0], len(m[1])
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if closesFence(lines[j], char, n) {
				break
			}
			body = append(body, lines[j])
		}
		out = append(out, block{fence: true, info: fenceInfo(m[2]), text: strings.Join(body, "\n")})
		i = j
	}
	flush()
	return out
}

// closesFence reports whether line is a closing fence: at most three spaces,
// at least n of char, then only spaces or tabs.
func closesFence(line string, char byte, n int) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	k := 0
	for k < len(t) && t[k] == char {
		k++
	}
	return k >= n && strings.Trim(t[k:], " \t") == ""
}

var infoWord = regexp.MustCompile(`^[A-Za-z0-9_+#.-]{1,24}`)

// fenceInfo keeps a plain language name; "suggestion" is reserved for the
// suggestions Aster renders itself.
func fenceInfo(s string) string {
	w := infoWord.FindString(strings.TrimSpace(s))
	if strings.EqualFold(w, "suggestion") {
		return ""
	}
	return w
}

// fenceFor returns a backtick fence longer than any backtick run in text.
func fenceFor(text string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

func renderFence(b block) string {
	f := fenceFor(b.text)
	return "\n" + f + b.info + "\n" + b.text + "\n" + f + "\n"
}

// sanitizeProse neutralises one run of prose, leaving single-line code spans
// as they are.
func sanitizeProse(s string, o SanitizeOptions, st *SanitizeStats) string {
	s = removeRefDefinitions(s, o, st)
	var b strings.Builder
	for _, seg := range splitCodeSpans(s) {
		if seg.code {
			// A backslash left right before the span would escape its opener.
			if trailingBackslashes(b.String())%2 == 1 {
				b.WriteByte(' ')
			}
			b.WriteString(seg.text)
			continue
		}
		b.WriteString(sanitizeText(seg.text, o, st))
	}
	// Replacements may have formed a new "[x]: dest" line.
	return neutralizeCommands(removeRefDefinitions(b.String(), o, st), st)
}

type span struct {
	code bool
	text string
}

// splitCodeSpans finds code spans the way CommonMark does (a backtick run not
// escaped by a backslash, closed by the next run of the same length), but
// only within one line and never across a "|" (GitHub splits table cells
// first). Anything it does not call code is sanitised, so a mismatch with
// GitHub's parser can only over-sanitise.
func splitCodeSpans(s string) []span {
	var out []span
	start := 0 // start of the pending prose
	i := 0
	for i < len(s) {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		n := j - i
		if escapedAt(s, i) {
			i = j
			continue
		}
		closeAt := findCloser(s, j, n)
		if closeAt < 0 {
			i = j
			continue
		}
		if i > start {
			out = append(out, span{text: s[start:i]})
		}
		out = append(out, span{code: true, text: s[i : closeAt+n]})
		i = closeAt + n
		start = i
	}
	if start < len(s) {
		out = append(out, span{text: s[start:]})
	}
	return out
}

func trailingBackslashes(s string) int {
	k := 0
	for k < len(s) && s[len(s)-1-k] == '\\' {
		k++
	}
	return k
}

// escapedAt reports whether s[i] is preceded by an odd number of backslashes.
func escapedAt(s string, i int) bool {
	k := 0
	for i-k-1 >= 0 && s[i-k-1] == '\\' {
		k++
	}
	return k%2 == 1
}

// findCloser returns the index of the next backtick run of exactly n at or
// after from on the same line without a "|" before it, or -1.
func findCloser(s string, from, n int) int {
	for i := from; i < len(s); {
		switch s[i] {
		case '\n', '|':
			return -1
		case '`':
			j := i
			for j < len(s) && s[j] == '`' {
				j++
			}
			if j-i == n {
				return i
			}
			i = j
		default:
			i++
		}
	}
	return -1
}

var (
	entityRef    = regexp.MustCompile(`&(#[0-9]{1,8};?|#[xX][0-9A-Fa-f]{1,8};?|[A-Za-z][A-Za-z0-9]{1,31};)`)
	tagStart     = regexp.MustCompile(`<([A-Za-z/!?])`)
	inlineLink   = regexp.MustCompile(`\]\(\s*(<[^>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^)\n]*\)))?\s*\)`)
	bareURL      = regexp.MustCompile(`(?i)\b(?:https?://|ftp://|www\.)[^\s<>]*`)
	schemeURL    = regexp.MustCompile(`(?i)\b(?:javascript|vbscript|data|mailto|xmpp):[^\s<>]+`)
	refDef       = regexp.MustCompile(`(?m)^ {0,3}\[[^\]\n]+\]:[ \t]*(\S+).*$`)
	mentionAt    = regexp.MustCompile(`@([A-Za-z0-9_])`)
	issueRef     = regexp.MustCompile(`#([0-9])`)
	ghRef        = regexp.MustCompile(`(?i)\bGH-([0-9])`)
	commandStart = regexp.MustCompile(`(?m)^([ \t>*+-]*(?:[0-9]+[.)][ \t]*)?)/([A-Za-z])`)
)

// sanitizeText neutralises prose that is certainly not code.
func sanitizeText(s string, o SanitizeOptions, st *SanitizeStats) string {
	// Entities first, so "&#64;" cannot become a mention and our own &lt; stays.
	s = entityRef.ReplaceAllStringFunc(s, func(m string) string { return "&amp;" + m[1:] })
	s = tagStart.ReplaceAllStringFunc(s, func(m string) string { st.HTML++; return "&lt;" + m[1:] })
	// Removing one link can bring a new "](" together: repeat until none is
	// left (each round shortens the text).
	for changed := true; changed; {
		changed = false
		s = inlineLink.ReplaceAllStringFunc(s, func(m string) string {
			dest := strings.TrimSpace(inlineLink.FindStringSubmatch(m)[1])
			dest = strings.TrimSuffix(strings.TrimPrefix(dest, "<"), ">")
			if AllowedURL(dest, o.AllowedHosts) {
				return m
			}
			st.Links++
			changed = true
			return "]"
		})
	}
	s = bareURL.ReplaceAllStringFunc(s, func(m string) string {
		trimmed := strings.TrimRight(m, ".,;:!?*_~'\")]")
		if AllowedURL(trimmed, o.AllowedHosts) {
			return m
		}
		st.Links++
		return "[link removed]" + m[len(trimmed):]
	})
	s = schemeURL.ReplaceAllStringFunc(s, func(m string) string { st.Links++; return "[link removed]" })
	s = mentionAt.ReplaceAllStringFunc(s, func(m string) string { st.Mentions++; return "＠" + m[1:] })
	s = issueRef.ReplaceAllStringFunc(s, func(m string) string { st.References++; return "＃" + m[1:] })
	s = ghRef.ReplaceAllStringFunc(s, func(m string) string { st.References++; return m[:2] + "‑" + m[3:] })
	// Last, so no replacement above can leave an image behind.
	if n := strings.Count(s, "!["); n > 0 {
		st.Images += n
		s = strings.ReplaceAll(s, "![", `!\[`)
	}
	return s
}

// removeRefDefinitions drops link reference definitions whose destination
// is not allowed ("[x]: https://evil/" would turn "[x]" into a link).
func removeRefDefinitions(s string, o SanitizeOptions, st *SanitizeStats) string {
	return refDef.ReplaceAllStringFunc(s, func(line string) string {
		dest := strings.Trim(refDef.FindStringSubmatch(line)[1], "<>")
		if AllowedURL(dest, o.AllowedHosts) {
			return line
		}
		st.Links++
		return ""
	})
}

// neutralizeCommands escapes a slash that starts a line (after any list or
// quote markers), so bots that read the raw body see no /command; Markdown
// still shows the slash.
func neutralizeCommands(s string, st *SanitizeStats) string {
	return commandStart.ReplaceAllStringFunc(s, func(m string) string {
		st.Commands++
		i := strings.LastIndexByte(m, '/')
		return m[:i] + `\` + m[i:]
	})
}

// AllowedURL reports whether raw is an absolute http(s) URL to an allowed
// host (or a subdomain of one), without credentials: the one link rule of
// everything Aster posts.
func AllowedURL(raw string, hosts []string) bool {
	if len(hosts) == 0 {
		return false
	}
	if strings.HasPrefix(strings.ToLower(raw), "www.") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range hosts {
		h = strings.ToLower(h)
		if host == h || strings.HasSuffix(host, "."+h) {
			return true
		}
	}
	return false
}

// proseSafe reports whether every part of s that GitHub would render as
// prose (outside fences and single-line code spans) is free of images, HTML,
// foreign links, mentions, references and /commands.
func proseSafe(s string, o SanitizeOptions) bool {
	return Problem(s, o) == ""
}

var (
	mentionLike = regexp.MustCompile(`@[A-Za-z0-9_]`)
	refLike     = regexp.MustCompile(`#[0-9]|(?i)\bGH-[0-9]`)
	commandLike = regexp.MustCompile(`(?m)^[ \t>*+-]*(?:[0-9]+[.)][ \t]*)?/[A-Za-z]`)
)

// Problem names the first unsafe construct in s's prose, or "": what Sanitize
// guarantees is absent from its output (tests check posted text with it).
func Problem(s string, o SanitizeOptions) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && Hidden(r) {
			return "hidden character"
		}
	}
	for _, blk := range splitFences(s) {
		if blk.fence {
			continue
		}
		var prose strings.Builder
		for _, seg := range splitCodeSpans(blk.text) {
			if seg.code {
				prose.WriteString(" ")
				continue
			}
			t := seg.text
			switch {
			case tagStart.MatchString(t):
				return "raw HTML: " + tagStart.FindString(t)
			case strings.Contains(t, "!["):
				return "image"
			case mentionLike.MatchString(t):
				return "mention"
			case refLike.MatchString(t):
				return "reference"
			}
			for _, m := range inlineLink.FindAllStringSubmatch(t, -1) {
				dest := strings.Trim(strings.TrimSpace(m[1]), "<>")
				if !AllowedURL(dest, o.AllowedHosts) {
					return "link to " + dest
				}
			}
			for _, m := range bareURL.FindAllString(t, -1) {
				if !AllowedURL(strings.TrimRight(m, ".,;:!?*_~'\")]"), o.AllowedHosts) {
					return "link " + m
				}
			}
			if schemeURL.MatchString(t) {
				return "scheme link"
			}
			prose.WriteString(t)
		}
		if commandLike.MatchString(prose.String()) {
			return "command"
		}
		for _, m := range refDef.FindAllStringSubmatch(prose.String(), -1) {
			if !AllowedURL(strings.Trim(m[1], "<>"), o.AllowedHosts) {
				return "reference definition"
			}
		}
	}
	if o.MaxBytes > 0 && len(s) > o.MaxBytes {
		return "over the length cap"
	}
	return ""
}

package gate

import (
	"regexp"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/finding"
)

// A rule that warns about switching a safety check off (certificate
// verification) also fires inside the code that implements the switch: a
// library's own `verify=False`, a client's --insecure flag. There the line is
// the feature, not a mistake, and the finding is at most a note. The code is
// recognised by its shape, never by a repository's names: the flagged line,
// or a condition above it in the same function, reads an option — a
// parameter of the enclosing function or a field of a settings object —
// whose name says what it switches (verify, insecure, skip_verify, ...).

// optionContextLines is how far above a finding its function header and
// guarding conditions are looked for.
const optionContextLines = 40

// optionName matches the last part of an option's name, any case, with or
// without separators: verify, ssl_verify, verifySSL, insecure,
// InsecureSkipVerify, check_hostname, validate_certs, cert_reqs, no_verify.
var optionName = regexp.MustCompile(`(?i)^(ssl_?|tls_?|no_?)?(verify|insecure|check_?hostname|validate_?certs?|cert_?reqs|strict_?ssl|reject_?unauthorized)(_?(ssl|tls|certs?|peer|host|hostname))?$|^(?i)(insecure_?)?skip_?(tls_?|ssl_?|cert_?)?verif(y|ication)$`)

// funcHeader finds a function's start in Python, Go, JavaScript/TypeScript,
// Ruby, Java-like languages and PHP; group 1 is the text from its "(".
var funcHeader = regexp.MustCompile(`^\s*(?:async\s+)?(?:def\s+\w+|func\s*(?:\([^)]*\)\s*)?\w*|function\s*\w*|(?:(?:public|private|protected|internal|static|final|override|suspend|fun)\s+)+[\w<>\[\],?\s]*?\w+)\s*(\(.*)$`)

// guardLine is a line that chooses by a condition.
var guardLine = regexp.MustCompile(`^\s*(?:\}\s*)?(?:if\b|elif\b|else\s+if\b|unless\b|when\b|case\b|switch\b)`)

// identRef is an identifier or a dotted reference (self.verify, opts.Insecure).
var identRef = regexp.MustCompile(`[A-Za-z_$][\w$]*(?:\s*(?:\.|->|\?\.)\s*[A-Za-z_$][\w$]*)*`)

// refSep separates the parts of a dotted reference.
var refSep = regexp.MustCompile(`\s*(?:\.|->|\?\.)\s*`)

// warnsOfSwitchedOffCheck reports a finding about a safety check switched
// off: certificate verification (the CWE-295 family).
func warnsOfSwitchedOffCheck(f finding.Finding) bool {
	const family = "cwe-family:certificate"
	if slices.ContainsFunc(f.CWE, func(c string) bool { return cweFamily(c) == family }) {
		return true
	}
	return cweFamily(cweOf(f)) == family
}

// optionContext adds to want, for each finding about a switched-off check,
// the lines above it that optionNotes reads.
func optionContext(fs []finding.Finding, want map[string]map[int]bool) {
	for _, f := range fs {
		if f.StartLine <= 0 || f.Path == "" || !warnsOfSwitchedOffCheck(f) {
			continue
		}
		m := want[f.Path]
		if m == nil {
			m = map[int]bool{}
			want[f.Path] = m
		}
		for n := max(1, f.StartLine-optionContextLines); n <= f.StartLine; n++ {
			m[n] = true
		}
	}
}

// optionNotes makes a note of each finding about a switched-off check whose
// line implements an option (see above), saying which option.
func optionNotes(fs []finding.Finding, lines map[string]map[int]string) {
	for i, f := range fs {
		if f.StartLine <= 0 || f.Severity == finding.Note || !warnsOfSwitchedOffCheck(f) {
			continue
		}
		if opt := implementedOption(lines[f.Path], f.StartLine); opt != "" {
			fs[i].Severity = finding.Note
			fs[i].Message = strings.TrimSpace(f.Message) + " (In code that implements the `" + opt + "` option, where switching the check off is the option's purpose: a note.)"
		}
	}
}

// implementedOption returns the option the line at n reads, or a condition
// above it in its function reads, or "" when there is none.
func implementedOption(lines map[int]string, n int) string {
	var guards []string
	var params []string
	header := false
	for k := n; k >= max(1, n-optionContextLines); k-- {
		l, ok := lines[k]
		if !ok {
			break
		}
		switch {
		case k == n:
			// The flagged line's value side: what the check is set to
			// (the field assigned, ctx.check_hostname, is the check itself).
			if i := strings.IndexAny(l, "=:"); i >= 0 {
				guards = append(guards, l[i+1:])
			}
		case guardLine.MatchString(l):
			guards = append(guards, l)
		}
		if m := funcHeader.FindStringSubmatch(l); m != nil && k < n {
			// The parameter list, which may go on over a few lines.
			text := m[1]
			for j := k + 1; j < n && j <= k+5 && !strings.Contains(text, ")"); j++ {
				text += " " + lines[j]
			}
			if end := strings.Index(text, ")"); end >= 0 {
				text = text[:end]
			}
			// Every name of each parameter before its default: the
			// parameter's own name comes first in some languages (verify
			// bool, verify=True) and last in others (boolean insecure).
			for _, p := range strings.Split(strings.TrimPrefix(text, "("), ",") {
				p, _, _ = strings.Cut(p, "=")
				params = append(params, identRef.FindAllString(p, -1)...)
			}
			header = true
			break
		}
	}
	for _, g := range guards {
		for _, ref := range identRef.FindAllString(g, -1) {
			parts := refSep.Split(ref, -1)
			last := parts[len(parts)-1]
			if !optionName.MatchString(last) {
				continue
			}
			// A field of an object (self.verify, opts.Insecure) is a setting;
			// a bare name counts only as a parameter of the function.
			if len(parts) > 1 && !slices.Contains([]string{"ssl", "tls", "http", "https", "crypto"}, strings.ToLower(parts[0])) {
				return last
			}
			if header && slices.Contains(params, last) {
				return last
			}
		}
	}
	return ""
}

package safetext

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Redactor replaces secrets with [REDACTED:<rule>]: well-known token formats (the kinds
// gitleaks looks for), private-key blocks, credentials and tokens in URLs, high-entropy
// values assigned to secret-sounding names, and every configured secret value (the App's
// private key, the webhook secret, the model API key, tokens named by llm.redact_env). It
// is the one redactor: of prompts and model answers, of everything posted to GitHub, of
// GitHub errors and of log lines. A nil *Redactor redacts the shapes only.
type Redactor struct {
	values []string
}

// NewRedactor returns a Redactor that also removes each of values: the whole value (values
// shorter than 6 bytes are ignored: they would redact ordinary words) and, for a value of
// several lines such as a PEM key, each line of 8 bytes or more, so a quoted part goes too.
func NewRedactor(values []string) *Redactor {
	var vs []string
	add := func(v string, minLen int) {
		v = strings.TrimSpace(v)
		if len(v) >= minLen && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	for _, v := range values {
		add(v, 6)
		if strings.Contains(v, "\n") {
			for _, line := range strings.Split(v, "\n") {
				add(line, 8)
			}
		}
	}
	// Longest first, so a value containing another is removed whole.
	sort.Slice(vs, func(i, j int) bool { return len(vs[i]) > len(vs[j]) })
	return &Redactor{values: vs}
}

// secretRule is one pattern. group selects the part to replace (0: all).
type secretRule struct {
	name  string
	re    *regexp.Regexp
	group int
	// minEntropy, when set, keeps matches that look like ordinary words.
	minEntropy float64
}

// Rules written for Aster after the kinds of secrets gitleaks' default
// configuration detects; each is anchored on a distinctive prefix or context
// so that ordinary code is left alone.
var secretRules = []secretRule{
	{name: "private-key", re: regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)`)},
	{name: "aws-access-key-id", re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b`)},
	{name: "github-token", re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9_]{30,255}\b`)},
	{name: "github-fine-grained-pat", re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{22,255}\b`)},
	{name: "gitlab-token", re: regexp.MustCompile(`\bgl(?:pat|ptt|dt|rt|cbt|imt|soat|ft)-[A-Za-z0-9_-]{20,}\b`)},
	{name: "slack-token", re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`)},
	{name: "slack-webhook", re: regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_+-]{20,}`)},
	{name: "stripe-key", re: regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b`)},
	{name: "anthropic-key", re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`)},
	{name: "openai-key", re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`)},
	{name: "google-api-key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{name: "npm-token", re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
	{name: "pypi-token", re: regexp.MustCompile(`\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`)},
	{name: "sendgrid-key", re: regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`)},
	{name: "twilio-key", re: regexp.MustCompile(`\bSK[0-9a-fA-F]{32}\b`)},
	{name: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`)},
	{name: "url-token", re: regexp.MustCompile(`(?i)[?&](?:access_token|token|jwt|sig|signature|x-amz-signature)=([^&\s"'#]+)`), group: 1},
	{name: "url-credentials", re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@'"]{1,128}:([^\s/@'"]{3,256})@`), group: 1},
	{name: "bearer-token", re: regexp.MustCompile(`(?i)\b(?:bearer|token)\s+([A-Za-z0-9._~+/-]{20,}=*)`), group: 1, minEntropy: 3.0},
	{name: "aws-secret-key", re: regexp.MustCompile(`(?i)aws.{0,20}?(?:secret|private).{0,20}?[=:]\s*["']?([A-Za-z0-9/+=]{40})\b`), group: 1},
	{name: "generic-secret", re: regexp.MustCompile(`(?i)(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|client[_-]?secret|private[_-]?key|credentials?)(?:[_-][a-z0-9]{1,12}){0,2}["']?\s*(?::=|=>|[=:])\s*["'\x60]?([A-Za-z0-9_\-+/=.~!@#$%^&*]{12,200})`), group: 1, minEntropy: 3.3},
}

// Redaction counts what was removed, by rule. It never holds the secrets.
type Redaction map[string]int

// Add merges o into r.
func (r Redaction) Add(o Redaction) {
	for k, v := range o {
		r[k] += v
	}
}

// Total is the number of secrets removed.
func (r Redaction) Total() int {
	n := 0
	for _, v := range r {
		n += v
	}
	return n
}

// Redact returns s with every secret replaced, and what was removed.
func (rd *Redactor) Redact(s string) (string, Redaction) {
	found := Redaction{}
	var values []string
	if rd != nil {
		values = rd.values
	}
	for _, v := range values {
		if n := strings.Count(s, v); n > 0 {
			s = strings.ReplaceAll(s, v, "[REDACTED:configured-secret]")
			found["configured-secret"] += n
		}
	}
	for _, rule := range secretRules {
		if !rule.re.MatchString(s) {
			continue
		}
		s = replaceRule(s, rule, found)
	}
	return s, found
}

// RedactString is Redact without the counts.
func (rd *Redactor) RedactString(s string) string {
	out, _ := rd.Redact(s)
	return out
}

func replaceRule(s string, rule secretRule, found Redaction) string {
	repl := "[REDACTED:" + rule.name + "]"
	var b strings.Builder
	last := 0
	for _, m := range rule.re.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[0], m[1]
		if rule.group > 0 {
			start, end = m[2*rule.group], m[2*rule.group+1]
			if start < 0 {
				continue
			}
		}
		val := s[start:end]
		if strings.HasPrefix(val, "[REDACTED:") {
			continue
		}
		if rule.minEntropy > 0 && (entropy(val) < rule.minEntropy || looksLikeCode(val)) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(repl)
		last = end
		found[rule.name]++
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// looksLikeCode rejects generic matches that are identifiers or calls rather
// than literal values: os.Getenv, self.config.token, some_function_name.
func looksLikeCode(v string) bool {
	if strings.ContainsAny(v, "(){}") {
		return true
	}
	lower, upper, digit := false, false, false
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	// A dotted or snake_case name of letters only is a reference, not a value.
	if !digit && (strings.Contains(v, ".") || strings.Contains(v, "_")) {
		return true
	}
	return !digit && !(lower && upper)
}

// DiffRedactor redacts diff lines one at a time, remembering when it is inside
// a private-key block so every line of the block goes, and line numbers stay.
type DiffRedactor struct {
	rd     *Redactor
	inKey  bool
	Counts Redaction
}

var (
	pemBegin = regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	pemEnd   = regexp.MustCompile(`-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
)

// NewDiffRedactor starts a redactor for one file's lines.
func (rd *Redactor) NewDiffRedactor() *DiffRedactor {
	return &DiffRedactor{rd: rd, Counts: Redaction{}}
}

// Line redacts one line of content.
func (d *DiffRedactor) Line(s string) string {
	if d.inKey {
		if pemEnd.MatchString(s) {
			d.inKey = false
		}
		return "[REDACTED:private-key]"
	}
	if pemBegin.MatchString(s) && !pemEnd.MatchString(s) {
		d.inKey = true
		d.Counts["private-key"]++
		return "[REDACTED:private-key]"
	}
	out, found := d.rd.Redact(s)
	d.Counts.Add(found)
	return out
}

// RedactShapes is Redact of the shapes alone, for text from a place that holds no
// configured secret (an HTTP error, a client library's message).
func RedactShapes(s string) string { return (*Redactor)(nil).RedactString(s) }

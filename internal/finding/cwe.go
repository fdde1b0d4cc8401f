package finding

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxCWEs bounds the weaknesses kept per finding.
const maxCWEs = 8

var cweRE = regexp.MustCompile(`(?i)^\s*(?:cwe[-_ ]?)?([0-9]{1,6})\b`)

// parseCWE reads "CWE-89", "CWE-89: Improper Neutralization...", "cwe-89",
// "89" or 89 as "CWE-89"; anything else gives "".
func parseCWE(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case float64:
		if x != float64(int(x)) {
			return ""
		}
		s = strconv.Itoa(int(x))
	case int:
		s = strconv.Itoa(x)
	default:
		return ""
	}
	m := cweRE.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return ""
	}
	return "CWE-" + strconv.Itoa(n)
}

// cweList reads a metadata value that is one CWE or a list of them (Semgrep
// writes lists of "CWE-89: ..." strings; Aster's ast-grep rules one string).
func cweList(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if c := parseCWE(e); c != "" {
				out = append(out, c)
			}
		}
	default:
		if c := parseCWE(x); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// normalizeCWEs keeps the valid, distinct entries of cs, in order, at most
// maxCWEs.
func normalizeCWEs(cs []string) []string {
	var out []string
	for _, c := range cs {
		if n := parseCWE(c); n != "" && !slices.Contains(out, n) && len(out) < maxCWEs {
			out = append(out, n)
		}
	}
	return out
}

// cweTags are the SARIF rule tags of cs, as GitHub code scanning reads them.
func cweTags(cs []string) []string {
	tags := []string{"security"}
	for _, c := range cs {
		tags = append(tags, "external/cwe/"+strings.ToLower(c))
	}
	return tags
}

// cweFromTags reads "external/cwe/cwe-89" tags (GitHub's convention) and
// "CWE-89: ..." ones (Semgrep's).
func cweFromTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		low := strings.ToLower(strings.TrimSpace(t))
		if rest, ok := strings.CutPrefix(low, "external/cwe/"); ok {
			out = append(out, rest)
		} else if strings.HasPrefix(low, "cwe-") {
			out = append(out, low)
		}
	}
	return normalizeCWEs(out)
}

// cweURL is MITRE's page of a CWE ("CWE-89").
func cweURL(c string) string {
	n, ok := strings.CutPrefix(c, "CWE-")
	if !ok {
		return ""
	}
	return fmt.Sprintf("https://cwe.mitre.org/data/definitions/%s.html", n)
}

// UnmarshalJSON reads the tags and ignores a properties bag of another shape:
// tools put anything there, and a rule's tags are never worth refusing a log.
func (p *sarifRuleProperties) UnmarshalJSON(b []byte) error {
	var raw struct {
		Tags []json.RawMessage `json:"tags"`
	}
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	for _, t := range raw.Tags {
		var s string
		if json.Unmarshal(t, &s) == nil && len(p.Tags) < 64 {
			p.Tags = append(p.Tags, s)
		}
	}
	return nil
}

// NormalizeCWE reads one CWE reference as analyzers spell it ("CWE-89",
// "cwe-89", "89", "external/cwe/cwe-89", "CWE-89: Improper ...") and returns
// it as "CWE-89", or "" when s names no CWE.
func NormalizeCWE(s string) string {
	if len(s) > 256 {
		return ""
	}
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(strings.ToLower(s), "external/cwe/"); ok {
		s = rest
	}
	return parseCWE(s)
}

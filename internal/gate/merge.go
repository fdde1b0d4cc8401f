package gate

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/finding"
)

// merge is the last step of a gate run over every analyzer's findings: one
// problem reported by two analyzers on the same line (a hard-coded password
// that gitleaks and Bandit both see) becomes one finding that names both, and
// the findings are ordered most severe first, then by place. order ranks the
// analyzers (their order in the request) so that, among equally severe
// duplicates, the first analyzer's finding is the one kept.
func merge(fs []finding.Finding, order []string) []finding.Finding {
	rank := func(a string) int {
		if i := slices.Index(order, a); i >= 0 {
			return i
		}
		return len(order)
	}
	// Most severe first, then the analyzers' order, so the kept finding of a
	// group of duplicates is the first of it.
	slices.SortStableFunc(fs, func(a, b finding.Finding) int {
		return cmp.Or(b.Severity.Rank()-a.Severity.Rank(), cmp.Compare(rank(a.Analyzer), rank(b.Analyzer)))
	})
	type place struct {
		path string
		line int
	}
	kept := map[place][]int{}
	out := fs[:0]
	for _, f := range fs {
		if f.Path != "" && f.StartLine > 0 {
			k := place{f.Path, f.StartLine}
			if i := slices.IndexFunc(kept[k], func(i int) bool { return sameProblem(out[i], f) }); i >= 0 {
				j := kept[k][i]
				also := f.Analyzer + "/" + f.RuleID
				if !slices.Contains(out[j].Also, also) {
					out[j].Also = append(out[j].Also, also)
				}
				// The kept finding shows where the data came from when
				// only the merged one knew (a taint engine's flow).
				if len(out[j].Flow) == 0 && len(f.Flow) > 0 {
					out[j].Flow = f.Flow
				}
				continue
			}
			kept[k] = append(kept[k], len(out))
		}
		out = append(out, f)
	}
	sortReported(out)
	return out
}

// sortReported sorts a gate run's findings as reported: most severe first, then by
// place, analyzer, rule and message.
func sortReported(fs []finding.Finding) {
	slices.SortStableFunc(fs, func(a, b finding.Finding) int {
		return cmp.Or(b.Severity.Rank()-a.Severity.Rank(),
			cmp.Compare(a.Path, b.Path), cmp.Compare(a.StartLine, b.StartLine), cmp.Compare(a.StartColumn, b.StartColumn),
			cmp.Compare(a.Analyzer, b.Analyzer), cmp.Compare(a.RuleID, b.RuleID), cmp.Compare(a.Message, b.Message))
	})
}

// sameProblem reports whether two findings of different analyzers on one
// line are about the same thing: they share a category (credentials of any
// kind count as one), or a CWE family (the finding's own CWEs, or one named
// in its rule's text; see cweFamily).
func sameProblem(a, b finding.Finding) bool {
	if a.Analyzer == b.Analyzer {
		return false
	}
	group := func(f finding.Finding) []string {
		var out []string
		for _, c := range Categories(f) {
			if c == CategoryCloudKey {
				c = CategorySecret
			}
			out = append(out, c)
		}
		for _, w := range f.CWE {
			out = append(out, cweFamily(w))
		}
		if w := cweOf(f); w != "" && !slices.Contains(f.CWE, w) {
			out = append(out, cweFamily(w))
		}
		return out
	}
	gb := group(b)
	for _, c := range group(a) {
		if slices.Contains(gb, c) {
			return true
		}
	}
	return false
}

// cweOf finds a "CWE-n" in a finding's rule name or message (for analyzers
// whose output has no CWE field but names it in text), "" when there is none.
func cweOf(f finding.Finding) string {
	for _, s := range []string{f.RuleName, f.Message} {
		i := strings.Index(strings.ToUpper(s), "CWE-")
		if i < 0 {
			continue
		}
		j := i + 4
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j > i+4 {
			return "CWE-" + s[i+4:j]
		}
	}
	return ""
}

// cweFamilies groups CWEs that two analyzers give to one problem: a parent
// and its children, or neighbours that tools use for the same rule (a weak
// hash is CWE-327 to one tool and CWE-328 to another; an unsafe YAML load
// CWE-20 to Bandit and CWE-502 to others). A CWE of no family is its own.
// The groups are narrow on purpose: two findings on one line merge only when
// a reader would call them the same warning.
var cweFamilies = map[string][]int{
	"command-injection":   {77, 78, 88},
	"code-injection":      {94, 95, 96, 1336},
	"sql-injection":       {89, 564},
	"xss":                 {79, 80, 83, 116},
	"path-traversal":      {22, 23, 35, 36, 73},
	"xxe":                 {611, 776, 827},
	"deserialization":     {20, 502},
	"weak-crypto":         {326, 327, 328, 916, 759, 760, 1240},
	"weak-random":         {330, 331, 332, 334, 335, 336, 337, 338},
	"certificate":         {295, 296, 297, 298, 299, 599},
	"hard-coded-secret":   {259, 321, 798},
	"insecure-cookie":     {614, 1004, 1275},
	"file-permissions":    {276, 281, 732},
	"information-leak":    {200, 209, 215, 532},
	"open-redirect":       {601},
	"ssrf":                {918},
	"temporary-file":      {377, 379, 378},
	"unsafe-reflection":   {470},
	"resource-exhaustion": {400, 770},
}

// cweFamilyOf maps "CWE-n" to its family name.
var cweFamilyOf = func() map[string]string {
	m := map[string]string{}
	for name, ids := range cweFamilies {
		for _, id := range ids {
			m["CWE-"+strconv.Itoa(id)] = "cwe-family:" + name
		}
	}
	return m
}()

// cweFamily is the family of a CWE id ("CWE-328" → "cwe-family:weak-crypto"),
// or the id itself, upper-cased, when it has none.
func cweFamily(cwe string) string {
	cwe = strings.ToUpper(strings.TrimSpace(cwe))
	if f, ok := cweFamilyOf[cwe]; ok {
		return f
	}
	return cwe
}

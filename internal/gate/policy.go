package gate

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/finding"
)

// Class is a path class: a kind of file recognised by convention (tests,
// fixtures, docs, examples, vendored or generated code), whose findings a
// policy may suppress.
type Class string

// The path classes, in the order a file's classes are listed and their
// policies tried.
const (
	ClassGenerated Class = "generated"
	ClassVendored  Class = "vendored"
	ClassFixtures  Class = "fixtures"
	ClassTests     Class = "tests"
	ClassExamples  Class = "examples"
	ClassDocs      Class = "docs"
)

// Classes lists every class.
var Classes = []Class{ClassGenerated, ClassVendored, ClassFixtures, ClassTests, ClassExamples, ClassDocs}

// ParseClass reads a class name.
func ParseClass(s string) (Class, error) {
	if slices.Contains(Classes, Class(s)) {
		return Class(s), nil
	}
	return "", fmt.Errorf("class %q is not one of %s", s, classNames())
}

func classNames() string {
	names := make([]string, len(Classes))
	for i, c := range Classes {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// Finding categories a selector can name. A category is what a finding is
// about, whichever analyzer reported it.
const (
	// CategoryAssert: an assert statement (Bandit B101), the idiom of tests.
	CategoryAssert = "assert"
	// CategorySecret: a hard-coded password, key or token of a generic kind
	// (gitleaks' generic rules, private keys, Bandit B105-B107, rules about
	// hard-coded credentials) — test keys and documentation placeholders.
	CategorySecret = "secret"
	// CategoryCloudKey: a credential in a provider's own format (AWS access
	// key ids, GitHub, GitLab, Slack, Stripe, Google tokens, ...). It is never
	// part of "all", and no default policy suppresses it: a real-looking
	// cloud key is reported wherever it is.
	CategoryCloudKey = "cloud-key"
	// CategoryAll: every finding but a cloud key.
	CategoryAll = "all"
)

var categories = []string{CategoryAssert, CategorySecret, CategoryCloudKey, CategoryAll}

// cloudKeyPrefixes are gitleaks rule-id prefixes of provider-format
// credentials: their patterns are specific enough that a match is a real key
// (or a key that looks real to anyone who finds it).
var cloudKeyPrefixes = []string{
	"aws-", "github-", "gitlab-", "gcp-", "google-", "slack-", "stripe-", "npm-", "pypi-", "openai-",
	"anthropic-", "sendgrid-", "twilio-", "digitalocean-", "shopify-", "heroku-", "azure-", "alibaba-",
	"doppler-", "dropbox-", "hashicorp-", "mailgun-", "new-relic-", "postman-", "pulumi-", "rubygems-",
	"square-", "telegram-", "databricks-", "linear-", "atlassian-", "cloudflare-", "discord-", "gitter-",
	"grafana-", "huggingface-", "mailchimp-", "okta-", "planetscale-", "sentry-", "snyk-", "vault-",
}

// Categories returns the categories of f (none for most findings).
func Categories(f finding.Finding) []string {
	id := strings.ToLower(f.RuleID)
	switch {
	case f.Analyzer == "gitleaks":
		for _, p := range cloudKeyPrefixes {
			if strings.HasPrefix(id, p) {
				return []string{CategoryCloudKey}
			}
		}
		return []string{CategorySecret}
	case f.Analyzer == "bandit" && id == "b101":
		return []string{CategoryAssert}
	case f.Analyzer == "bandit" && (id == "b105" || id == "b106" || id == "b107"),
		f.Analyzer == "gosec" && id == "g101",
		strings.Contains(id, "hardcoded") || strings.Contains(id, "hard-coded"):
		return []string{CategorySecret}
	}
	return nil
}

// Selector picks findings: a category (assert, secret, cloud-key, all) or
// "analyzer/rule", where either part may be a glob ("bandit/B3*",
// "shellcheck/*").
type Selector string

// MaxSelectors bounds one class's suppress list, MaxClassGlobs its patterns.
const (
	MaxSelectors  = 64
	MaxClassGlobs = 512
)

// ParseSelector validates a selector.
func ParseSelector(s string) (Selector, error) {
	if slices.Contains(categories, s) {
		return Selector(s), nil
	}
	a, r, ok := strings.Cut(s, "/")
	if !ok || a == "" || r == "" || len(s) > 256 || strings.ContainsAny(s, " \t\n\x00") {
		return "", fmt.Errorf("selector %q is not a category (%s) or analyzer/rule", s, strings.Join(categories, ", "))
	}
	for _, p := range []string{a, r} {
		if _, err := path.Match(p, ""); err != nil {
			return "", fmt.Errorf("selector %q: %v", s, err)
		}
	}
	return Selector(s), nil
}

// Match reports whether the selector picks f, given f's categories.
func (s Selector) Match(f finding.Finding, cats []string) bool {
	switch string(s) {
	case CategoryAll:
		return !slices.Contains(cats, CategoryCloudKey)
	case CategoryAssert, CategorySecret, CategoryCloudKey:
		return slices.Contains(cats, string(s))
	}
	a, r, _ := strings.Cut(string(s), "/")
	okA, _ := path.Match(a, f.Analyzer)
	okR, _ := path.Match(strings.ToLower(r), strings.ToLower(f.RuleID))
	return okA && okR
}

// ClassPolicy is how one class is recognised and what is suppressed in it.
type ClassPolicy struct {
	Class Class
	// Globs recognise the class's files (gate glob syntax).
	Globs Globs
	// Suppress are the selectors of findings not reported in the class.
	Suppress []Selector
}

// Policy classifies files and suppresses findings by their class.
type Policy struct {
	classes []ClassPolicy
}

// DefaultClassGlobs returns the conventional patterns of a class.
func DefaultClassGlobs(c Class) []string {
	switch c {
	case ClassTests:
		return []string{"test/", "tests/", "testing/", "__tests__/", "spec/", "specs/", "e2e/",
			"test_*.py", "*_test.py", "conftest.py", "*_test.go", "*.test.js", "*.test.jsx", "*.test.ts", "*.test.tsx",
			"*.spec.js", "*.spec.jsx", "*.spec.ts", "*.spec.tsx", "*.test.mjs", "*.spec.mjs", "*_spec.rb", "*_test.rb",
			"*Test.java", "*Tests.java", "*_test.sh", "*.bats"}
	case ClassFixtures:
		return []string{"fixtures/", "fixture/", "testdata/", "test-data/", "test_data/", "__fixtures__/",
			"__snapshots__/", "__mocks__/"}
	case ClassDocs:
		return []string{"docs/", "doc/", "documentation/", "*.md", "*.markdown", "*.rst", "*.adoc"}
	case ClassExamples:
		return []string{"examples/", "example/", "_examples/", "samples/", "sample/", "demo/", "demos/"}
	case ClassVendored:
		return []string{"vendor/", "node_modules/", "third_party/", "third-party/", "thirdparty/",
			"bower_components/", "site-packages/", ".venv/", "venv/"}
	case ClassGenerated:
		return []string{"*.pb.go", "*_generated.go", "zz_generated*.go", "*.gen.go", "*.min.js",
			"*.min.css", "*.map", "*_pb2.py", "*_pb2_grpc.py", "*.designer.cs"}
	}
	return nil
}

// DefaultClassSuppress returns the selectors a class suppresses by default:
// asserts and generic secrets in docs and examples; everything but a cloud
// key in tests (test code does not ship: its asserts, disabled TLS checks,
// calls without timeouts and pickled fixtures are the idiom, not a hole),
// fixtures, vendored and generated code.
func DefaultClassSuppress(c Class) []string {
	switch c {
	case ClassDocs, ClassExamples:
		return []string{CategoryAssert, CategorySecret}
	case ClassTests, ClassFixtures, ClassVendored, ClassGenerated:
		return []string{CategoryAll}
	}
	return nil
}

// ClassSettings change one class: Globs (when non-nil) replace the
// conventional patterns, ExtraGlobs are added to them, and Suppress (when
// non-nil) replaces the default selectors (empty: report everything).
type ClassSettings struct {
	Globs      []string
	ExtraGlobs []string
	Suppress   []string
}

// NewPolicy builds the policy of the conventions with the given changes.
func NewPolicy(settings map[Class]ClassSettings) (*Policy, error) {
	p := &Policy{}
	for k := range settings {
		if _, err := ParseClass(string(k)); err != nil {
			return nil, err
		}
	}
	for _, c := range Classes {
		st := settings[c]
		globs := DefaultClassGlobs(c)
		if st.Globs != nil {
			globs = st.Globs
		}
		globs = append(slices.Clone(globs), st.ExtraGlobs...)
		if len(globs) > MaxClassGlobs {
			return nil, fmt.Errorf("%s: more than %d globs", c, MaxClassGlobs)
		}
		gs, err := CompileGlobs(globs)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", c, err)
		}
		sup := DefaultClassSuppress(c)
		if st.Suppress != nil {
			sup = st.Suppress
		}
		if len(sup) > MaxSelectors {
			return nil, fmt.Errorf("%s: more than %d suppress selectors", c, MaxSelectors)
		}
		cp := ClassPolicy{Class: c, Globs: gs}
		for _, s := range sup {
			sel, err := ParseSelector(s)
			if err != nil {
				return nil, fmt.Errorf("%s: suppress: %v", c, err)
			}
			cp.Suppress = append(cp.Suppress, sel)
		}
		p.classes = append(p.classes, cp)
	}
	return p, nil
}

// DefaultPolicy is the policy of the conventions alone.
func DefaultPolicy() *Policy {
	p, err := NewPolicy(nil)
	if err != nil {
		panic(err)
	}
	return p
}

// Classify returns the classes of a repository-relative path, in Classes
// order (a test under examples/ is both).
func (p *Policy) Classify(file string) []Class {
	var out []Class
	for _, c := range p.classes {
		if c.Globs.Match(file) {
			out = append(out, c.Class)
		}
	}
	return out
}

// Globs returns the patterns that recognise class c.
func (p *Policy) Globs(c Class) Globs {
	for _, cp := range p.classes {
		if cp.Class == c {
			return cp.Globs
		}
	}
	return nil
}

// SuppressesAll returns a class of file whose policy suppresses every
// finding the analyzer named analyzer could report there ("all", or a
// selector "ANALYZER/*"), if there is one: running the analyzer over that
// file would be work whose every result is thrown away. "all" leaves out
// cloud keys, which only gitleaks reports, so it never covers gitleaks.
func (p *Policy) SuppressesAll(analyzer, file string) (Class, bool) {
	if p == nil {
		return "", false
	}
	classes := p.Classify(file)
	for _, cp := range p.classes {
		if !slices.Contains(classes, cp.Class) {
			continue
		}
		for _, s := range cp.Suppress {
			if s == CategoryAll && analyzer != "gitleaks" {
				return cp.Class, true
			}
			a, r, ok := strings.Cut(string(s), "/")
			if ok && r == "*" {
				if m, _ := path.Match(a, analyzer); m {
					return cp.Class, true
				}
			}
		}
	}
	return "", false
}

// suppressedBy returns the class and selector that suppress f, if any.
func (p *Policy) suppressedBy(f finding.Finding, classes []Class) (Class, Selector, bool) {
	if len(classes) == 0 {
		return "", "", false
	}
	cats := Categories(f)
	for _, cp := range p.classes {
		if !slices.Contains(classes, cp.Class) {
			continue
		}
		for _, s := range cp.Suppress {
			if s.Match(f, cats) {
				return cp.Class, s, true
			}
		}
	}
	return "", "", false
}

// Apply marks each finding with its file's classes, and takes out of the
// review (Reported false, Suppressed set) those the filter kept but a class
// policy suppresses. Findings outside the diff are only classified: they are
// counted as outside the diff, not as suppressed.
func (p *Policy) Apply(ms []Marked) {
	if p == nil {
		return
	}
	for i := range ms {
		m := &ms[i]
		if m.Path == "" {
			continue
		}
		m.Classes = p.Classify(m.Path)
		if !m.Reported {
			continue
		}
		if c, s, ok := p.suppressedBy(m.Finding, m.Classes); ok {
			m.Reported = false
			m.Suppressed = c
			m.SuppressedBy = string(s)
		}
	}
}

// SuppressedText says, per class, how many findings its policy kept out of
// the review and of which rules ("12 in tests: bandit/B101×10,
// gitleaks/private-key×2"), most first. It is empty when none was.
func SuppressedText(s Summary) []string {
	var out []string
	for _, c := range Classes {
		rules := s.SuppressedByClass[c]
		if len(rules) == 0 {
			continue
		}
		keys := slices.Collect(maps.Keys(rules))
		slices.SortFunc(keys, func(a, b string) int { return cmp.Or(rules[b]-rules[a], strings.Compare(a, b)) })
		n := 0
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			n += rules[k]
			if len(parts) < 8 {
				parts = append(parts, k+"×"+strconv.Itoa(rules[k]))
			}
		}
		if len(keys) > 8 {
			parts = append(parts, "…")
		}
		out = append(out, fmt.Sprintf("%d in %s: %s", n, c, strings.Join(parts, ", ")))
	}
	return out
}

package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's top directory, seen from this package.
const repoRoot = ".."

// pages lists the Markdown files whose links must resolve: the front door, the
// contributor's guide, the security model (when present) and every docs page.
func pages(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md", "SECURITY.md"}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	var out []string
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(repoRoot, f)); err == nil {
			out = append(out, f)
		} else if f != "SECURITY.md" {
			t.Errorf("%s: %v", f, err)
		}
	}
	return out
}

func TestNoDeadLinks(t *testing.T) {
	c := newChecker(repoRoot)
	for _, p := range pages(t) {
		for _, problem := range c.check(p) {
			t.Error(problem)
		}
	}
}

// TestReadmeLinksEveryPage keeps the front door complete: a docs page that
// README.md does not link to is a page a newcomer cannot find.
func TestReadmeLinksEveryPage(t *testing.T) {
	c := newChecker(repoRoot)
	linked := map[string]bool{}
	for _, l := range c.links("README.md") {
		path, _, _ := strings.Cut(l.target, "#")
		linked[filepath.Clean(path)] = true
	}
	for _, p := range pages(t) {
		if strings.HasPrefix(p, "docs"+string(filepath.Separator)) && !linked[p] {
			t.Errorf("README.md does not link to %s", p)
		}
	}
}

// The checker must find what it is for: a missing file, a missing heading in
// another page and in the same page, while code spans, fenced blocks, external
// URLs and headings that exist pass.
func TestCheckerFindsDeadLinks(t *testing.T) {
	got := newChecker("testdata").check("page.md")
	want := []string{
		`page.md:9: link "missing.md": file missing.md does not exist`,
		`page.md:10: link "other.md#no-such-heading": no heading with anchor "no-such-heading" in other.md`,
		`page.md:11: link "#nowhere": no heading with anchor "nowhere" in page.md`,
		`page.md:12: link "sub/": file sub does not exist`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlug(t *testing.T) {
	// Anchors as GitHub renders them for headings of these pages.
	for heading, want := range map[string]string{
		"Quick start: the two commands":                            "quick-start-the-two-commands",
		"The sandbox: `aster exec`":                                "the-sandbox-aster-exec",
		"`POST /v1/validate`":                                      "post-v1validate",
		"`.aster.yml`":                                             "asteryml",
		"Metrics (`GET /metrics`)":                                 "metrics-get-metrics",
		"4. Behind a reverse proxy":                                "4-behind-a-reverse-proxy",
		"Flags, environment, `aster.yaml`":                         "flags-environment-asteryaml",
		"`aster bench` — the quietest full run (run 6, 1.7 → 7.7)": "aster-bench--the-quietest-full-run-run-6-17--77",
		"Agentic mode (`--agentic`)":                               "agentic-mode---agentic",
		"`scripts/k8s/ci.sh start-build | test | status`":          "scriptsk8scish-start-build--test--status",
		"The [GitHub App](x.md) **details**":                       "the-github-app-details",
		"run_tests and `max_pods`":                                 "run_tests-and-max_pods",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

type link struct {
	line   int
	target string
}

// checker reads Markdown files under root and caches each file's anchors.
type checker struct {
	root    string
	anchors map[string]map[string]bool
}

func newChecker(root string) *checker {
	return &checker{root: root, anchors: map[string]map[string]bool{}}
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an optional
	// "title"; text may hold one level of brackets ([`a[0]`](x)).
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef matches a reference definition: [name]: target
	refDef  = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	heading = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	fence   = regexp.MustCompile("^\\s*(`{3,}|~{3,})")
	htmlID  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	scheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// prose yields the lines of a Markdown file outside fenced code blocks, with
// their 1-based numbers.
func prose(text string, yield func(n int, line string)) {
	var open string
	for i, line := range strings.Split(text, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
			case strings.HasPrefix(strings.TrimSpace(line), open[:1]) && len(m[1]) >= len(open):
				open = ""
			}
			continue
		}
		if open == "" {
			yield(i+1, line)
		}
	}
}

// withoutCodeSpans removes `code spans` (of any number of backticks), whose
// brackets are not links.
func withoutCodeSpans(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		ticks := line[i : i+n]
		end := -1
		for j := i + n; j < len(line); {
			k := strings.Index(line[j:], ticks)
			if k < 0 {
				break
			}
			k += j
			if k+n == len(line) || line[k+n] != '`' {
				end = k
				break
			}
			for k < len(line) && line[k] == '`' {
				k++
			}
			j = k
		}
		if end < 0 { // an unmatched run is literal backticks
			b.WriteString(ticks)
			i += n
			continue
		}
		b.WriteString(" ")
		i = end + n
	}
	return b.String()
}

func (c *checker) read(file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(c.root, file))
	return string(b), err
}

// links returns every link of file outside code.
func (c *checker) links(file string) []link {
	text, err := c.read(file)
	if err != nil {
		return nil
	}
	var out []link
	prose(text, func(n int, line string) {
		line = withoutCodeSpans(line)
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{n, m[1]})
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			out = append(out, link{n, m[1]})
		}
	})
	return out
}

// anchorsOf returns the anchors GitHub gives file's headings (a repeated
// heading gets -1, -2, ...) and those of explicit <a id=...> tags.
func (c *checker) anchorsOf(file string) (map[string]bool, error) {
	if a, ok := c.anchors[file]; ok {
		return a, nil
	}
	text, err := c.read(file)
	if err != nil {
		return nil, err
	}
	a := map[string]bool{}
	seen := map[string]int{}
	prose(text, func(_ int, line string) {
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		s := slug(m[2])
		if k := seen[s]; k > 0 {
			a[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	})
	c.anchors[file] = a
	return a, nil
}

// check returns one line per dead link of file: a relative target that does
// not exist, or an #anchor that no heading of the target page produces.
func (c *checker) check(file string) []string {
	var problems []string
	for _, l := range c.links(file) {
		if l.target == "" || scheme.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
			continue // external: not this test's business
		}
		path, frag, _ := strings.Cut(l.target, "#")
		target := file
		if path != "" {
			target = filepath.Join(filepath.Dir(file), path)
			if _, err := os.Stat(filepath.Join(c.root, target)); err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: file %s does not exist", file, l.line, l.target, target))
				continue
			}
		}
		if frag == "" || !strings.HasSuffix(target, ".md") {
			continue
		}
		a, err := c.anchorsOf(target)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: link %q: %v", file, l.line, l.target, err))
			continue
		}
		if !a[frag] {
			problems = append(problems, fmt.Sprintf("%s:%d: link %q: no heading with anchor %q in %s", file, l.line, l.target, frag, target))
		}
	}
	return problems
}

// slug is GitHub's anchor for a heading: the rendered text (code spans,
// emphasis and link targets gone), lower-cased, with every character that is
// not a letter, digit, space, hyphen or underscore removed and spaces turned
// into hyphens.
func slug(h string) string {
	h = inlineLink.ReplaceAllStringFunc(h, func(m string) string {
		text := m[strings.Index(m, "[")+1 : strings.LastIndex(m, "](")]
		return text
	})
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

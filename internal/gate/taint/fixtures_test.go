package taint_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate/taint"
)

// markerRE is a fixture's expected finding: "# taint: <category>" (Python,
// and Jinja comments "{# taint: xss #}"), "// taint: <category>" (JS),
// "/* taint: ... */" (JSX), "<%# taint: ... %>" (EJS) or
// "{{! taint: ... }}" (Handlebars) on the sink's line.
var markerRE = regexp.MustCompile(`(?:#|//|/\*|\{\{!) taint: ([a-z-]+)`)

// site is a finding the fixtures expect, or one an engine reported.
type site struct {
	Path     string
	Line     int
	Category string
}

func (s site) String() string { return fmt.Sprintf("%s:%d %s", s.Path, s.Line, s.Category) }

// fixtures reads testdata/<lang>: every file, and the sites its markers
// expect.
func fixtures(t *testing.T, lang string) (files map[string][]byte, want []site) {
	t.Helper()
	root := filepath.Join("testdata", lang)
	files = map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		files[rel] = b
		sc := bufio.NewScanner(bytes.NewReader(b))
		for n := 1; sc.Scan(); n++ {
			if m := markerRE.FindStringSubmatch(sc.Text()); m != nil {
				if _, ok := taint.Categories[m[1]]; !ok {
					t.Fatalf("%s:%d: unknown category %q", rel, n, m[1])
				}
				want = append(want, site{rel, n, m[1]})
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, want
}

// patternRules are the categories judged by a call's own shape (a cookie's
// flags, a parser's options): their findings carry no flow.
var patternRules = map[string]bool{"insecure-cookie": true, "jwt-unverified": true, "xxe": true}

// checkFixtures asserts an engine's findings against the fixtures' markers:
// every marked sink found, on its line, with a flow from a source to that
// line (but for pattern rules and template environments), and nothing else.
func checkFixtures(t *testing.T, fs []finding.Finding, want []site) {
	t.Helper()
	got := map[site]finding.Finding{}
	for _, f := range fs {
		c := taint.Category(f.RuleID)
		if c == "" {
			t.Errorf("finding with a rule id that is not a taint category: %+v", f)
			continue
		}
		got[site{f.Path, f.StartLine, c}] = f
	}
	for _, w := range want {
		f, ok := got[w]
		if !ok {
			t.Errorf("missed %s", w)
			continue
		}
		delete(got, w)
		if len(f.CWE) == 0 || f.Severity.Rank() == 0 {
			t.Errorf("%s: no CWE or severity: %+v", w, f)
		}
		if patternRules[w.Category] || strings.Contains(f.Message, "autoescape") {
			continue
		}
		if len(f.Flow) < 2 {
			t.Errorf("%s: no flow from a source: %+v", w, f.Flow)
			continue
		}
		if last := f.Flow[len(f.Flow)-1]; last.Path != w.Path || last.Line != w.Line {
			t.Errorf("%s: the flow ends at %s:%d", w, last.Path, last.Line)
		}
		if first := f.Flow[0]; first.Text == "" || !strings.Contains(f.Message, first.Text) {
			t.Errorf("%s: the message %q does not name the source %q", w, f.Message, first.Text)
		}
	}
	var extra []string
	for s, f := range got {
		extra = append(extra, s.String()+": "+f.Message)
	}
	slices.Sort(extra)
	for _, e := range extra {
		t.Errorf("unexpected finding %s", e)
	}
}

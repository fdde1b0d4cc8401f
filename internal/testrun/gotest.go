package testrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// goEvent is one line of `go test -json` (cmd/test2json).
type goEvent struct {
	Action  string `json:"Action"`
	Package string `json:"Package"`
	Test    string `json:"Test"`
	Output  string `json:"Output"`
}

// goTest is a test that has started and not yet ended.
type goTest struct {
	out         []byte // the tail of its output
	hasChildren bool   // a subtest ran under it: count the subtests, not it
	seq         int    // the order it started in: tests left running are reported in it
}

// goParser summarises a `go test -json` stream fed to it in chunks of any
// size. Memory is bounded: lines by MaxLineBytes, each running test's output
// by 2×MaxMessageBytes, the running tests by maxTracked.
type goParser struct {
	sum        Summary
	line       []byte
	skipping   bool // inside an over-long line
	events     int
	badLines   int
	longLines  int
	tests      map[string]*goTest
	runs       int // "run" events so far
	pkgOut     map[string][]byte
	pkgFailed  map[string]int
	pkgResults map[string]string // package → "pass" / "fail"
}

func newGoParser() *goParser {
	return &goParser{
		tests:      map[string]*goTest{},
		pkgOut:     map[string][]byte{},
		pkgFailed:  map[string]int{},
		pkgResults: map[string]string{},
	}
}

// ParseGoTestJSON reads a whole `go test -json` stream (at most MaxReportBytes).
func ParseGoTestJSON(r io.Reader) Summary {
	c := NewCollector(Plan{Framework: "go", Format: FormatGoJSON})
	_, _ = io.Copy(c, r)
	return c.Summary()
}

func (g *goParser) write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !g.skipping {
				g.line = append(g.line, p...)
				if len(g.line) > MaxLineBytes {
					g.line, g.skipping = g.line[:0], true
					g.longLines++
				}
			}
			return
		}
		if !g.skipping {
			if len(g.line)+i > MaxLineBytes {
				g.longLines++
			} else {
				g.line = append(g.line, p[:i]...)
				g.handleLine(g.line)
			}
		}
		g.line, g.skipping = g.line[:0], false
		p = p[i+1:]
	}
}

func (g *goParser) handleLine(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var ev goEvent
	if line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Action == "" {
		g.badLines++
		return
	}
	g.events++
	if ev.Test == "" {
		g.packageEvent(ev)
		return
	}
	key := ev.Package + "\x00" + ev.Test
	switch ev.Action {
	case "run":
		g.runs++
		if len(g.tests) < maxTracked {
			g.tests[key] = &goTest{seq: g.runs}
		}
		if parent := g.parentOf(ev.Package, ev.Test); parent != nil {
			parent.hasChildren = true
		}
	case "output":
		if t := g.tests[key]; t != nil {
			t.out = appendTail(t.out, ev.Output, 2*MaxMessageBytes)
		}
	case "pass", "skip", "fail":
		t := g.tests[key]
		delete(g.tests, key)
		if t != nil && t.hasChildren {
			return
		}
		switch ev.Action {
		case "pass":
			g.sum.Passed++
		case "skip":
			g.sum.Skipped++
		case "fail":
			g.pkgFailed[ev.Package]++
			var out []byte
			if t != nil {
				out = t.out
			}
			addFailure(&g.sum, ev.Package, ev.Test, goMessage(out))
		}
	}
}

// packageEvent handles an event about a whole package: its output outside any
// test, and its final result.
func (g *goParser) packageEvent(ev goEvent) {
	switch ev.Action {
	case "output":
		if len(g.pkgOut) < maxTracked || g.pkgOut[ev.Package] != nil {
			g.pkgOut[ev.Package] = appendTail(g.pkgOut[ev.Package], ev.Output, 2*MaxMessageBytes)
		}
	case "pass", "fail":
		g.pkgResults[ev.Package] = ev.Action
		if ev.Action == "fail" {
			g.finishFailedPackage(ev.Package)
		}
		delete(g.pkgOut, ev.Package)
	}
}

// finishFailedPackage accounts for a package that failed: tests that never
// reported (the binary crashed or timed out) fail, and a package that failed
// with no failing test (build error, TestMain, panic outside a test) is one
// failure named after the package.
func (g *goParser) finishFailedPackage(pkg string) {
	prefix := pkg + "\x00"
	var left []string
	for key := range g.tests {
		if strings.HasPrefix(key, prefix) {
			left = append(left, key)
		}
	}
	// In the order they started, not the map's: the same stream must give
	// the same report (a review posted twice would differ otherwise).
	slices.SortFunc(left, func(a, b string) int { return g.tests[a].seq - g.tests[b].seq })
	for _, key := range left {
		t := g.tests[key]
		delete(g.tests, key)
		if t.hasChildren {
			continue
		}
		name := strings.TrimPrefix(key, prefix)
		g.pkgFailed[pkg]++
		addFailure(&g.sum, pkg, name, "the test did not report a result (the test binary crashed or timed out)\n"+goMessage(t.out))
	}
	if g.pkgFailed[pkg] == 0 {
		addFailure(&g.sum, pkg, pkg, goMessage(g.pkgOut[pkg]))
	}
}

// parentOf returns the closest running ancestor of a subtest.
func (g *goParser) parentOf(pkg, test string) *goTest {
	for {
		i := strings.LastIndexByte(test, '/')
		if i < 0 {
			return nil
		}
		test = test[:i]
		if t := g.tests[pkg+"\x00"+test]; t != nil {
			return t
		}
	}
}

func (g *goParser) summary() Summary {
	s := g.sum
	s.Parsed = g.events > 0
	if !s.Parsed {
		s.Error = "no go test -json events on stdout (see stderr for build errors)"
	} else if g.longLines > 0 {
		s.Error = fmt.Sprintf("%d lines over %d bytes were skipped", g.longLines, MaxLineBytes)
	}
	s.Failures = nonNil(s.Failures)
	return s
}

// goMessage keeps the lines of a test's output that explain it: not the
// === RUN / --- FAIL bookkeeping that test2json already turned into events.
func goMessage(out []byte) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(out), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "--- PASS") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return b.String()
}

// appendTail appends s to b and keeps the last max bytes.
func appendTail(b []byte, s string, max int) []byte {
	b = append(b, s...)
	if len(b) > max {
		b = append(b[:0], b[len(b)-max:]...)
	}
	return b
}

func nonNil(fs []Failure) []Failure {
	if fs == nil {
		return []Failure{}
	}
	return fs
}

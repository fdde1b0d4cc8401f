package review

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/testrun"
)

// smallRepo is a git repository with one commit on main.
func smallRepo(t *testing.T) string {
	t.Helper()
	r := newGitRepo(t, "small")
	r.commit("base", map[string]string{"a.txt": "one\n"})
	return r.dir
}

// TestNothingToReviewAndUncommitted: --base HEAD reviews nothing and says so (success, no
// sandbox asked for: the Gate is nil and no "no sandbox" note appears); the working tree's
// uncommitted changes are named, since the review reads only commits.
func TestNothingToReviewAndUncommitted(t *testing.T) {
	dir := smallRepo(t)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new file.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ch, err := FromGit(t.Context(), GitOptions{Dir: dir, Base: "HEAD"})
	if err != nil {
		t.Fatal(err)
	}
	if !ch.NothingToReview() || len(ch.Uncommitted) != 2 || ch.Uncommitted[0] != "a.txt" || ch.Uncommitted[1] != "new file.txt" {
		t.Fatalf("nothing %v, uncommitted %q", ch.NothingToReview(), ch.Uncommitted)
	}
	rep, err := Run(t.Context(), ch, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Conclusion != Success || rep.Conclusion.ExitCode() != 0 || len(rep.Analyzers) != 0 || rep.DurationsMS["gate"] != 0 {
		t.Errorf("conclusion %s, analyzers %v", rep.Conclusion, rep.Analyzers)
	}
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{"nothing to review: HEAD", `2 uncommitted changes in the working tree are not reviewed`, `"a.txt", "new file.txt"`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "no sandbox") {
		t.Errorf("an empty change reads as a skipped gate:\n%s", notes)
	}
	var md, js bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "**Nothing to review**: HEAD changes no file") || strings.Contains(md.String(), "## Findings") ||
		!strings.Contains(md.String(), "uncommitted") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"findings": []`, `"analyzers": []`, `"skipped_sample": []`, `"conclusion": "success"`} {
		if !strings.Contains(js.String(), key) {
			t.Errorf("json lacks %s:\n%s", key, js.String())
		}
	}

	// A committed change with a clean tree names nothing.
	gitRepo{t: t, dir: dir}.commit("more", nil)
	if ch, err = FromGit(t.Context(), GitOptions{Dir: dir, Base: "HEAD~1"}); err != nil || ch.NothingToReview() || len(ch.Uncommitted) != 0 {
		t.Fatalf("clean tree: err %v, nothing %v, uncommitted %q", err, ch.NothingToReview(), ch.Uncommitted)
	}
	// A head that is not the checked-out commit says nothing about the working tree.
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("dirty\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ch, err = FromGit(t.Context(), GitOptions{Dir: dir, Base: "HEAD~1", Head: "HEAD~1"}); err != nil || len(ch.Uncommitted) != 0 {
		t.Fatalf("other head: err %v, uncommitted %q", err, ch.Uncommitted)
	}
}

// TestMarkdownOrdersBySeverity: errors first, then warnings, then notes, whatever the file
// order.
func TestMarkdownOrdersBySeverity(t *testing.T) {
	mk := func(sev finding.Severity, path string, line int, rule string) gate.Marked {
		return gate.Marked{Finding: finding.Finding{Analyzer: "x", RuleID: rule, Severity: sev, Path: path, StartLine: line, EndLine: line, Message: rule}, Reported: true}
	}
	rep := &Report{Files: FilesInfo{Changed: 3}, Findings: []gate.Marked{
		mk(finding.Note, "a.py", 1, "N1"), mk(finding.Warning, "a.py", 2, "W1"), mk(finding.Error, "z.py", 9, "E1"),
		mk(finding.Note, "b.py", 1, "N2"), mk(finding.Error, "b.py", 3, "E2"),
	}}
	rep.Summary = gate.Summarize(rep.Findings)
	// The model's comments are listed errors first as well.
	rep.Model.Comments = []Comment{{Path: "m.py", Line: 1, Body: "model-note", Severity: finding.Note},
		{Path: "m.py", Line: 2, Body: "model-warning", Severity: finding.Warning}, {Path: "m.py", Line: 3, Body: "model-error", Severity: finding.Error}}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	s := md.String()
	order := []string{"x/E1", "x/E2", "x/W1", "x/N1", "x/N2", "model-error", "model-warning", "model-note"}
	last := -1
	for _, r := range order {
		i := strings.Index(s, r)
		if i < 0 || i < last {
			t.Fatalf("want the order %v in:\n%s", order, s)
		}
		last = i
	}
}

// pytestCollectionError is the shape of pytest's JUnit <error> for a test module that cannot
// be imported: the message attribute, then a traceback whose last line names the error.
const pytestCollectionError = `collection failure
ImportError while importing test module '/work/tests/test_app.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package)
<frozen importlib._bootstrap>:1204: in _gcd_import
    ???
<frozen importlib._bootstrap>:1176: in _find_and_load
    ???
<frozen importlib._bootstrap>:1147: in _find_and_load_unlocked
    ???
tests/test_app.py:1: in <module>
    import flask_missing
E   ModuleNotFoundError: No module named 'flask_missing'`

// TestMarkdownShowsFirstFailingLines: the first failures show the lines that say what went
// wrong (the ModuleNotFoundError at the end of a long traceback), in a code block, and the
// command is the repository's.
func TestMarkdownShowsFirstFailingLines(t *testing.T) {
	fails := []testrun.Failure{{Suite: "tests.test_app", Name: "tests.test_app", Message: pytestCollectionError}}
	for i := range 25 {
		fails = append(fails, testrun.Failure{Name: "test_" + string(rune('a'+i)), Message: "assert 1 == 2"})
	}
	rep := &Report{Files: FilesInfo{Changed: 1}, Tests: &TestsReport{Status: TestsFailed,
		Command: testrun.PytestPlan().Command(), Summary: testrun.Summary{Failed: 26, Failures: fails}}}
	rep.Summary = gate.Summarize(nil)
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	s := md.String()
	for _, want := range []string{
		"`python3 -m pytest -p no:cacheprovider --junitxml=/tmp/.aster-test-report.xml`",
		"- `tests.test_app`\n",
		"  ```text\n  collection failure\n  ImportError while importing test module '/work/tests/test_app.py'.",
		"  E   ModuleNotFoundError: No module named 'flask_missing'\n  ```",
		"- … and 6 more",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("markdown lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "sh -c") || strings.Contains(s, "<frozen") {
		t.Errorf("markdown shows the wrapper or the traceback's middle:\n%s", s)
	}
	if got := strings.Count(s, "```text"); got != maxFailuresShown {
		t.Errorf("%d failures with output, want %d", got, maxFailuresShown)
	}
}

// TestReviewPytestFirstFailingLines runs real pytest in the sandbox on a test module that
// cannot be imported: the report's command is pytest's (not the JUnit wrapper's), and the
// Markdown shows the ModuleNotFoundError.
func TestReviewPytestFirstFailingLines(t *testing.T) {
	e := newEngine(t)
	dir := smallRepo(t)
	r := gitRepo{t: t, dir: dir}
	r.branch("feature")
	r.commit("tests", map[string]string{"tests/test_app.py": "import flask_missing\n\n\ndef test_x():\n    assert True\n"})
	rep := review(t, e, dir, Options{Tests: e.tests})
	tr := rep.Tests
	if tr == nil || tr.Status != TestsFailed || len(tr.Command) == 0 || tr.Command[0] != "python3" || len(tr.Summary.Failures) == 0 {
		t.Fatalf("tests %+v", tr)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if s := md.String(); !strings.Contains(s, "ModuleNotFoundError: No module named 'flask_missing'") || !strings.Contains(s, "`python3 -m pytest") || strings.Contains(s, "sh -c") {
		t.Errorf("markdown:\n%s", s)
	}
}

// TestInlineShowsEveryHiddenCharacter: the terminal report shows each character the
// sanitiser of model text drops (bidi and zero-width controls, the soft hyphen, tag
// characters, variation selectors) as a \u escape: one test of what is hidden, not two.
func TestInlineShowsEveryHiddenCharacter(t *testing.T) {
	for _, r := range []rune{0x202e, 0x200b, 0x2066, 0x00ad, 0xe0041, 0xfe0f, 0x061c, 0xfeff, 0x1b} {
		got := inline("a" + string(r) + "b")
		if want := fmt.Sprintf(`a\u%04xb`, r); got != want {
			t.Errorf("inline(U+%04X) = %q, want %q", r, got, want)
		}
		if !safetext.Hidden(r) {
			t.Errorf("U+%04X is not Hidden", r)
		}
	}
	if got := inline("plain é ü"); got != "plain é ü" {
		t.Errorf("inline changed plain text: %q", got)
	}
}

// An archive read to its end waits for git; one left with more unread stops
// git instead of reading the rest (a snapshot that stopped at its read bound
// would otherwise still pay for the whole tree).
func TestArchiveCloseStopsGit(t *testing.T) {
	r := newGitRepo(t, "big")
	r.commit("base", map[string]string{"a.txt": "one\n", "big.bin": strings.Repeat("\x00", 8<<20)})

	whole, err := archive(t.Context(), r.dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(whole)
	for {
		if _, err := tr.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := whole.Close(); err != nil {
		t.Fatalf("close after the end: %v", err)
	}
	if st := whole.(*cmdReader).cmd.ProcessState; !st.Success() {
		t.Errorf("git after the whole archive was read: %v", st)
	}

	part, err := archive(t.Context(), r.dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(part, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	if err := part.Close(); err != nil {
		t.Fatalf("close early: %v", err)
	}
	if st := part.(*cmdReader).cmd.ProcessState; st.Success() {
		t.Errorf("git ran to its end although 8 MiB were left unread: %v", st)
	}

	bad, err := archive(t.Context(), r.dir, "no-such-revision")
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Close(); !errors.Is(err, ErrGit) {
		t.Errorf("close of a failed archive: %v, want ErrGit", err)
	}
}

// The Markdown report lists the reported findings most
// severe first, each up to its cap, then say how many more there are; findings
// not reported are neither listed nor counted.
func TestFindingListsCapped(t *testing.T) {
	rep := &Report{}
	n := maxMarkdownFindings + 3
	for i := range n {
		sev := finding.Note
		if i%10 == 9 {
			sev = finding.Error
		}
		rep.Findings = append(rep.Findings, gate.Marked{Reported: true, Finding: finding.Finding{
			Analyzer: "a", RuleID: "r", Severity: sev, Path: "f.go", StartLine: i + 1, Message: fmt.Sprintf("m%d", i)}})
	}
	rep.Findings = append(rep.Findings, gate.Marked{Finding: finding.Finding{Analyzer: "a", RuleID: "r", Severity: finding.Error, Path: "f.go", StartLine: 1, Message: "unreported"}})
	rep.Files.Changed, rep.Summary = 1, gate.Summarize(rep.Findings)
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		text, more string
		max        int
	}{
		"markdown": {md.String(), "- … and 3 more (see --format json)\n", maxMarkdownFindings},
	} {
		var listed []string
		for _, l := range strings.Split(c.text, "\n") {
			if strings.HasPrefix(l, "- **") {
				listed = append(listed, l)
			}
		}
		if len(listed) != c.max {
			t.Errorf("%s: %d findings listed, want %d", name, len(listed), c.max)
			continue
		}
		// 20 errors (every tenth of 203) come first, then the notes in file order.
		if !strings.Contains(listed[0], "m9") || !strings.Contains(listed[19], "m199") || !strings.Contains(listed[20], "m0") {
			t.Errorf("%s: not most severe first: %q, %q, %q", name, listed[0], listed[19], listed[20])
		}
		if !strings.Contains(c.text, listed[len(listed)-1]+"\n"+c.more) {
			t.Errorf("%s: the list does not end with %q", name, c.more)
		}
		if strings.Contains(c.text, "unreported") {
			t.Errorf("%s: lists a finding that is not reported", name)
		}
	}
}

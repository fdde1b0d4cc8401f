package bench

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
)

func marked(path string, start, end int, reported bool) gate.Marked {
	return gate.Marked{Finding: finding.Finding{Analyzer: "a", RuleID: "r", Severity: finding.Warning, Path: path, StartLine: start, EndLine: end}, Reported: reported}
}

func TestScore(t *testing.T) {
	list := []Expected{
		{Path: "app.py", Line: 10, EndLine: 12, CWE: "CWE-89", What: "sql"}, // found on its second line
		{Path: "app.py", Line: 20, CWE: "CWE-78", What: "cmd"},              // a finding one line off: missed
		{Path: "x.js", Line: 3, CWE: "CWE-601", What: "redirect"},           // found
		{Path: "x.js", Line: 7, CWE: "CWE-95", What: "eval"},                // only an unreported finding: missed
		{Path: "y.py", Line: 5, CWE: "CWE-328", What: "md5"},                // missed, and off the change
	}
	findings := []gate.Marked{
		marked("app.py", 11, 11, true),
		marked("app.py", 21, 21, true), // unexpected: ±0 means ±0
		marked("app.py", 9, 12, true),  // starts before the entry: unexpected
		marked("x.js", 3, 3, true),
		marked("x.js", 3, 4, true), // a second finding on a found entry is not unexpected
		marked("x.js", 7, 7, false),
		marked("other.go", 1, 1, true), // unexpected
	}
	text := "@@ -0,0 +1,30 @@\n" + strings.Repeat("+x\n", 30)
	files, err := diff.ParseString("diff --git a/app.py b/app.py\nnew file mode 100644\n--- /dev/null\n+++ b/app.py\n" + text +
		"diff --git a/x.js b/x.js\nnew file mode 100644\n--- /dev/null\n+++ b/x.js\n" + text)
	if err != nil {
		t.Fatal(err)
	}
	r := Score(list, findings, diff.NewIndex(files))
	if r.Expected != 5 || r.Found != 2 || r.Injections != 3 || r.InjectionsFound != 1 || r.Unexpected != 3 {
		t.Fatalf("recall %+v", r)
	}
	var missed []string
	for _, e := range r.Missed {
		missed = append(missed, e.Location())
	}
	if got := strings.Join(missed, " "); got != "app.py:20 x.js:7 y.py:5" {
		t.Errorf("missed %s", got)
	}
	if len(r.OffChange) != 1 || r.OffChange[0].Path != "y.py" {
		t.Errorf("off change %+v", r.OffChange)
	}
	if len(r.Matches) != 2 || r.Matches[0].Line != 11 || r.Matches[1].Expected.Path != "x.js" {
		t.Errorf("matches %+v", r.Matches)
	}
	// Without a diff nothing is off the change.
	if r := Score(list, findings, nil); len(r.OffChange) != 0 || r.Found != 2 {
		t.Errorf("no index: %+v", r)
	}
}

func TestParseExpected(t *testing.T) {
	good := `[{"path":"a/b.py","line":3,"cwe":"CWE-89","what":"sql"},{"path":"a/b.py","line":4,"end_line":6,"cwe":"CWE-78","what":"cmd"}]`
	list, err := ParseExpected(strings.NewReader(good))
	if err != nil || len(list) != 2 || list[1].last() != 6 || !list[0].Injection() {
		t.Fatalf("%v %+v", err, list)
	}
	for _, bad := range []string{
		``, `{}`, `[{"path":"a.py","line":1,"cwe":"CWE-1","what":"x","extra":1}]`,
		`[{"path":"/a.py","line":1,"cwe":"CWE-1","what":"x"}]`,
		`[{"path":"../a.py","line":1,"cwe":"CWE-1","what":"x"}]`,
		`[{"path":"a/./b.py","line":1,"cwe":"CWE-1","what":"x"}]`,
		`[{"path":"a.py","line":0,"cwe":"CWE-1","what":"x"}]`,
		`[{"path":"a.py","line":5,"end_line":4,"cwe":"CWE-1","what":"x"}]`,
		`[{"path":"a.py","line":1,"cwe":"89","what":"x"}]`,
		`[{"path":"a.py","line":1,"cwe":"CWE-1","what":" "}]`,
		`[{"path":"a.py","line":1,"cwe":"CWE-1","what":"x"},{"path":"a.py","line":1,"cwe":"CWE-1","what":"y"}]`,
		`[] []`,
	} {
		if _, err := ParseExpected(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func FuzzParseExpected(f *testing.F) {
	f.Add(`[{"path":"a/b.py","line":3,"end_line":4,"cwe":"CWE-89","what":"sql"}]`)
	f.Add(`[{"path":"a","line":-1}]`)
	f.Add(`[`)
	f.Fuzz(func(t *testing.T, s string) {
		list, err := ParseExpected(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, e := range list {
			if e.Line < 1 || e.last() < e.Line || !cwePattern.MatchString(e.CWE) || e.Path == "" {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}

// TestExpectedListsParse checks the lists kept in the tree.
func TestExpectedListsParse(t *testing.T) {
	names, err := fs.Glob(ExpectedLists(), "*.json")
	if err != nil || len(names) < 2 {
		t.Fatalf("lists %v %v", names, err)
	}
	injections := 0
	for _, n := range names {
		list, ok, err := LoadExpected(ExpectedLists(), strings.TrimSuffix(n, ".json"))
		if err != nil || !ok || len(list) == 0 {
			t.Fatalf("%s: %v %v %d", n, ok, err, len(list))
		}
		for _, e := range list {
			if e.Injection() {
				injections++
			}
		}
	}
	if injections == 0 {
		t.Error("no injection in any list")
	}
	if _, ok, err := LoadExpected(ExpectedLists(), "no-such-repo"); ok || err != nil {
		t.Errorf("missing list: %v %v", ok, err)
	}
}

package gate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
)

const filterDiff = `diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,6 +1,7 @@
 import subprocess
 
 def run(cmd):
-    return subprocess.run(cmd)
+    return subprocess.run(cmd, shell=True)
+
 # end
 x = 1
 y = 2
diff --git a/new.sh b/new.sh
new file mode 100755
--- /dev/null
+++ b/new.sh
@@ -0,0 +1,2 @@
+#!/bin/sh
+rm -rf $1
diff --git a/old.py b/old.py
deleted file mode 100644
--- a/old.py
+++ /dev/null
@@ -1 +0,0 @@
-print(1)
`

func TestFilterModes(t *testing.T) {
	files, err := diff.ParseString(filterDiff)
	if err != nil {
		t.Fatal(err)
	}
	fs := []finding.Finding{
		{RuleID: "added", Path: "app.py", StartLine: 4, EndLine: 4, Severity: finding.Error},
		{RuleID: "context", Path: "app.py", StartLine: 1, EndLine: 1, Severity: finding.Note},
		{RuleID: "range-touching-added", Path: "app.py", StartLine: 2, EndLine: 5, Severity: finding.Warning},
		{RuleID: "same-file-outside-hunk", Path: "app.py", StartLine: 40, EndLine: 40, Severity: finding.Error},
		{RuleID: "other-file", Path: "lib.py", StartLine: 4, EndLine: 4, Severity: finding.Error},
		{RuleID: "new-file-level", Path: "new.sh", Severity: finding.Warning},
		{RuleID: "deleted-file", Path: "old.py", StartLine: 1, EndLine: 1, Severity: finding.Error},
		{RuleID: "no-path", Severity: finding.Note},
	}
	type marks struct{ File, Context, Added bool }
	wantMarks := map[string]marks{
		"added":                  {true, true, true},
		"context":                {true, true, false},
		"range-touching-added":   {true, true, true},
		"same-file-outside-hunk": {true, false, false},
		"other-file":             {false, false, false},
		"new-file-level":         {true, true, true},
		"deleted-file":           {false, false, false},
		"no-path":                {false, false, false},
	}
	wantReported := map[Mode][]string{
		ModeAdded:       {"added", "range-touching-added", "new-file-level"},
		ModeDiffContext: {"added", "context", "range-touching-added", "new-file-level"},
		ModeFile:        {"added", "context", "range-touching-added", "same-file-outside-hunk", "new-file-level"},
		ModeNoFilter:    {"added", "context", "range-touching-added", "same-file-outside-hunk", "other-file", "new-file-level", "deleted-file", "no-path"},
	}
	for _, mode := range Modes {
		t.Run(string(mode), func(t *testing.T) {
			ms := NewFilter(files, mode).MarkAll(fs)
			if len(ms) != len(fs) {
				t.Fatalf("marked %d of %d: findings must never be dropped", len(ms), len(fs))
			}
			var reported []string
			for _, m := range ms {
				if got := (marks{m.InDiffFile, m.InDiffContext, m.OnAddedLine}); got != wantMarks[m.RuleID] {
					t.Errorf("%s: marks %+v, want %+v", m.RuleID, got, wantMarks[m.RuleID])
				}
				if m.Reported {
					reported = append(reported, m.RuleID)
				}
			}
			if d := cmp.Diff(wantReported[mode], reported); d != "" {
				t.Errorf("reported (-want +got):\n%s", d)
			}
			s := Summarize(ms)
			if s.Total != len(fs) || s.Reported != len(wantReported[mode]) || s.OutsideDiff != len(fs)-len(wantReported[mode]) {
				t.Errorf("summary %+v", s)
			}
		})
	}
}

func TestFails(t *testing.T) {
	ms := []Marked{
		{Finding: finding.Finding{Severity: finding.Error}, Reported: false},
		{Finding: finding.Finding{Severity: finding.Warning}, Reported: true},
	}
	cases := map[finding.Severity]bool{finding.Error: false, finding.Warning: true, finding.Note: true, "": false, "never": false}
	for min, want := range cases {
		if got := Fails(ms, min); got != want {
			t.Errorf("Fails(%q) = %v, want %v (unreported findings never fail)", min, got, want)
		}
	}
}

func TestParseMode(t *testing.T) {
	var m Mode
	if err := m.Set("diff_context"); err != nil || m != ModeDiffContext {
		t.Errorf("Set: %v %q", err, m)
	}
	if err := m.Set("bogus"); err == nil {
		t.Error("bogus mode accepted")
	}
	if got, _ := ParseMode(""); got != ModeAdded {
		t.Errorf("default = %q", got)
	}
}

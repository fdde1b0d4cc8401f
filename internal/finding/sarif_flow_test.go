package finding

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadTaintSARIF reads the Python taint engine's real output
// (testdata/tools/aster-taint.sarif): the finding's flow from source to
// sink, the file it left out as a notice, and its run's cost.
func TestReadTaintSARIF(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "tools", "aster-taint.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReadSARIF(bytes.NewReader(data), ReadOptions{Analyzer: "taint-python", Root: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 1 {
		t.Fatalf("findings %+v", res.Findings)
	}
	f := res.Findings[0]
	if f.RuleID != "aster.taint.sql-injection" || f.Severity != Error || f.Path != "app.py" || f.StartLine != 18 ||
		!cmp.Equal(f.CWE, []string{"CWE-89"}) {
		t.Errorf("finding %+v", f)
	}
	if len(f.Flow) < 3 {
		t.Fatalf("flow %+v", f.Flow)
	}
	first, last := f.Flow[0], f.Flow[len(f.Flow)-1]
	if first != (FlowStep{Path: "app.py", Line: 14, Text: "request.args.get('q', '')"}) ||
		last != (FlowStep{Path: "app.py", Line: 18, Text: "cur.execute"}) {
		t.Errorf("flow from %+v to %+v", first, last)
	}
	if !cmp.Equal(res.Notices, []Notice{{Path: "broken.py", Text: "taint: broken.py skipped: does not parse as Python 3 (line 1)"}}) {
		t.Errorf("notices %+v", res.Notices)
	}
	if len(res.ToolErrors) != 0 {
		t.Errorf("a warning notice is not a tool error: %v", res.ToolErrors)
	}
	if res.Stats == nil || *res.Stats != (RunStats{Files: 1, MS: 12, MaxRSSKB: 20000, MaxFileMS: 3, Slowest: "app.py"}) {
		t.Errorf("stats %+v", res.Stats)
	}
}

// TestFlowRoundTrip writes a finding's flow as SARIF codeFlows and reads it
// back; a longer flow is cut to its first and last MaxFlowSteps/2 steps and
// step texts to MaxFlowStepText bytes on one line.
func TestFlowRoundTrip(t *testing.T) {
	f := Finding{Analyzer: "taint-python", RuleID: "aster.taint.xss", Severity: Error, Path: "app/views.py",
		StartLine: 30, EndLine: 30, Message: "request.args['q'] reaches make_response (cross-site scripting)"}
	for i := 0; i < 20; i++ {
		f.Flow = append(f.Flow, FlowStep{Path: "app/views.py", Line: 10 + i, Text: fmt.Sprintf("step%d", i)})
	}
	f.Flow[1].Path = "app/helpers.py"
	f.Flow[2].Text = "a\nb " + strings.Repeat("x", 300)
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, []Finding{f}, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := ReadSARIF(&buf, ReadOptions{Analyzer: "taint-python"})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Findings[0].Flow
	if len(got) != MaxFlowSteps {
		t.Fatalf("%d steps, want %d", len(got), MaxFlowSteps)
	}
	if got[0] != f.Flow[0] || got[1] != f.Flow[1] || got[len(got)-1] != f.Flow[19] || got[MaxFlowSteps/2] != f.Flow[20-MaxFlowSteps/2] {
		t.Errorf("steps kept %+v", got)
	}
	if s := got[2].Text; strings.ContainsAny(s, "\n") || len(s) > MaxFlowStepText+4 || !strings.HasPrefix(s, "a b x") {
		t.Errorf("step text %q", s)
	}
}

// TestReadSARIFJudged: a taint engine's "judged" invocation property is read
// by file, line and category, "call" judgements marked, paths cleaned, and
// malformed entries skipped.
func TestReadSARIFJudged(t *testing.T) {
	doc := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"aster-taint"}},
"invocations":[{"executionSuccessful":true,"properties":{"files":1,"ms":3,"judged":{
"/work/app.py":[[3,"sql-injection","flow"],[9,"insecure-deserialization","call"],[0,"xss","flow"],["x","xss","flow"],[4,"xss"]],
"lib/x.py":"not a list"}}}],"results":[]}]}`
	res, err := ReadSARIF(strings.NewReader(doc), ReadOptions{Root: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, byCall := res.Judged.Has("app.py", 3, 3, "sql-injection"); !ok || byCall {
		t.Errorf("app.py:3 sql: %v %v", ok, byCall)
	}
	if ok, byCall := res.Judged.Has("app.py", 8, 9, "insecure-deserialization"); !ok || !byCall {
		t.Errorf("app.py:9 deserialization: %v %v", ok, byCall)
	}
	if ok, _ := res.Judged.Has("app.py", 3, 3, "xss"); ok {
		t.Error("xss judged on a line nothing named")
	}
	if n := len(res.Judged["app.py"]); n != 2 || len(res.Judged) != 1 {
		t.Errorf("judged %+v", res.Judged)
	}
}

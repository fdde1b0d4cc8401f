package finding

import (
	"strings"
	"testing"
)

// Bandit's HIGH weak-hash results are warnings; its other HIGH results stay
// errors, and a LOW confidence still lowers both one step.
func TestBanditWeakHashIsAWarning(t *testing.T) {
	out := `{"errors":[],"results":[
	  {"filename":"a.py","line_number":3,"test_id":"B324","test_name":"hashlib","issue_severity":"HIGH","issue_confidence":"HIGH","issue_text":"Use of weak SHA1 hash for security."},
	  {"filename":"a.py","line_number":4,"test_id":"B602","test_name":"subprocess_popen_with_shell_equals_true","issue_severity":"HIGH","issue_confidence":"HIGH","issue_text":"shell=True"},
	  {"filename":"a.py","line_number":5,"test_id":"B324","test_name":"hashlib","issue_severity":"HIGH","issue_confidence":"LOW","issue_text":"Use of weak MD5 hash for security."}
	]}`
	res, err := ReadBandit(strings.NewReader(out), ReadOptions{Analyzer: "bandit"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]Severity{3: Warning, 4: Error, 5: Note}
	if len(res.Findings) != len(want) {
		t.Fatalf("%d findings", len(res.Findings))
	}
	for _, f := range res.Findings {
		if f.Severity != want[f.StartLine] {
			t.Errorf("line %d %s: %s, want %s", f.StartLine, f.RuleID, f.Severity, want[f.StartLine])
		}
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/evidence"
	"github.com/asterhq/aster/internal/llm/llmtest"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// evidenceRepo makes a repository whose feature branch breaks add (it
// subtracts) and adds mul; main's .aster.yml sets model.evidence.
func evidenceRepo(t *testing.T, mode string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "calc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir, "-c", "gc.auto=0", "-c", "maintenance.auto=false",
			"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main", ".")
	write(".aster.yml", "model:\n  evidence: "+mode+"\n  max_evidence_runs: 3\n")
	write("calc.py", "def add(a, b):\n    return a + b\n")
	git("add", ".")
	git("commit", "-q", "-m", "base")
	git("checkout", "-q", "-b", "feature")
	write("calc.py", "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n")
	git("commit", "-q", "-am", "feature")
	return dir
}

// The scripted model makes four claims: a true one with a failing test, a
// false one whose test passes, one without evidence, and one whose evidence
// tries to overwrite .aster.yml.
const evidenceAnswer = `{"summary":"Changes add and adds mul.","comments":[
{"path":"calc.py","line":2,"end_line":null,"quote":"    return a - b","severity":"error","body":"add subtracts.","suggestion":null,
 "evidence":{"files":[{"path":"tests/test_add.py","content":"from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"}],
  "argv":["python3","-m","pytest","-q","-p","no:cacheprovider","tests/test_add.py"],"expect":"fail"}},
{"path":"calc.py","line":6,"end_line":null,"quote":"    return a * b","severity":"warning","body":"mul is wrong.","suggestion":null,
 "evidence":{"files":[{"path":"tests/test_mul.py","content":"from calc import mul\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"}],
  "argv":["python3","-m","pytest","-q","-p","no:cacheprovider","tests/test_mul.py"],"expect":"fail"}},
{"path":"calc.py","line":5,"end_line":null,"quote":"def mul(a, b):","severity":"note","body":"mul has no docstring.","suggestion":null,"evidence":null},
{"path":"calc.py","line":5,"end_line":null,"quote":"def mul(a, b):","severity":"warning","body":"mul overflows.","suggestion":null,
 "evidence":{"files":[{"path":".aster.yml","content":"model: {evidence: off}\n"}],"argv":["true"],"expect":"pass"}}
]}`

// TestReviewModelEvidence runs `aster review --format json` with a scripted
// model whose comments carry evidence; the evidence runs in real sandboxes.
func TestReviewModelEvidence(t *testing.T) {
	sandboxtest.Docker(t)
	for _, mode := range []string{"required", "preferred"} {
		t.Run(mode, func(t *testing.T) {
			dir := evidenceRepo(t, mode)
			srv := llmtest.OpenAI(t, cliModelKey, llmtest.Reply{Text: evidenceAnswer})
			env := map[string]string{
				"ASTER_INIT_PATH": sandboxtest.InitBinary(t), "ASTER_IMAGES": sandboxtest.Image(),
				"ASTER_LLM_PROVIDER": "openai", "ASTER_LLM_MODEL": "gpt-test", "ASTER_LLM_BASE_URL": srv.URL, "ASTER_LLM_API_KEY": cliModelKey,
			}
			var out, errb bytes.Buffer
			code := Run(t.Context(), []string{"review", "--format", "json", "--base", "main", "--head", "feature", dir},
				IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: envMap(env)})
			if code != 0 && code != 1 {
				t.Fatalf("exit %d\nstderr: %s", code, errb.String())
			}
			var rep review.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("report: %v\n%s", err, out.String())
			}
			m := rep.Model
			byLine := map[string]review.Comment{}
			for _, c := range m.Comments {
				byLine[string(c.Severity)+"@"+strconv.Itoa(c.Line)] = c
			}
			dropped := map[string]review.DroppedComment{}
			for _, d := range m.DroppedComments {
				dropped[strconv.Itoa(d.Line)+":"+d.Reason[:min(len(d.Reason), 12)]] = d
			}
			// The true claim: confirmed on the head, the base passes; the
			// comment shows the command, the test, the output and the revision.
			c, ok := byLine["error@2"]
			if !ok || c.Verification == nil || c.Verification.Status != evidence.Confirmed {
				t.Fatalf("true claim not confirmed: comments %+v dropped %+v", m.Comments, m.DroppedComments)
			}
			v := c.Verification
			if v.Head.Status != evidence.RunFailed || v.Base == nil || v.Base.Status != evidence.RunPassed || v.Head.Revision != rep.Head.SHA {
				t.Errorf("verification = %+v head %+v base %+v", v, v.Head, v.Base)
			}
			for _, want := range []string{"Verified by running it", "python3 -m pytest", "`tests/test_add.py`", "assert -1 == 5", rep.Head.SHA[:12]} {
				if !strings.Contains(c.Body, want) {
					t.Errorf("comment body lacks %q:\n%s", want, c.Body)
				}
			}
			// The false claim is refuted and never posted.
			if _, posted := byLine["warning@6"]; posted {
				t.Errorf("refuted comment posted")
			}
			ref, ok := dropped["6:refuted by r"]
			if !ok || ref.Verification == nil || ref.Verification.Status != evidence.Refuted || !strings.Contains(ref.Reason, "python3 -m pytest") {
				t.Errorf("refuted comment not dropped with its reason: %+v", m.DroppedComments)
			}
			// The evidence that writes .aster.yml never ran.
			var rejected *evidence.Verification
			if mode == "required" {
				if len(m.Comments) != 1 {
					t.Errorf("required posted %d comments, want only the confirmed one", len(m.Comments))
				}
				if _, ok := dropped["5:not verified"]; !ok {
					t.Errorf("unverified comments not dropped under required: %+v", m.DroppedComments)
				}
				for _, d := range m.DroppedComments {
					if d.Line == 5 && d.Verification != nil {
						rejected = d.Verification
					}
				}
			} else {
				note, warn := byLine["note@5"], byLine["warning@5"]
				if !strings.Contains(note.Body, "Unverified") || !strings.Contains(warn.Body, "Unverified") {
					t.Errorf("unverified comments not marked: %q / %q", note.Body, warn.Body)
				}
				rejected = warn.Verification
			}
			if rejected == nil || rejected.Head != nil || !strings.Contains(rejected.Reason, "evidence rejected") {
				t.Errorf("evidence over .aster.yml was not rejected before running: %+v", rejected)
			}
			if rep.DurationsMS["evidence"] <= 0 || !strings.Contains(m.Note, "evidence ("+mode+"): 2 run, 1 confirmed") {
				t.Errorf("evidence step not reported: durations %v, note %q", rep.DurationsMS, m.Note)
			}
		})
	}
}

package app

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/evidence"
	"github.com/asterhq/aster/internal/llm/llmtest"
	"github.com/asterhq/aster/internal/review/modelstep"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/store"
)

// claim is a model comment on calc.py whose evidence is a pytest test expected to fail.
func claim(line int, quote, test string) map[string]any {
	return map[string]any{"path": "calc.py", "line": line, "end_line": nil, "quote": quote, "severity": "error",
		"body": "This returns the wrong result.", "suggestion": nil,
		"evidence": map[string]any{
			"files":  map[string]any{"tests/test_claim_" + quote[4:7] + ".py": "from calc import add, mul\n\n" + test},
			"argv":   []any{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_claim_" + quote[4:7] + ".py"},
			"expect": "fail",
		}}
}

// TestModelFindingResolvedByItsEvidence: a scripted model's two claims on push 1, each with
// a failing test as evidence, are confirmed in a real sandbox and posted; push 2 fixes one
// bug and the model says nothing new: the App re-runs both tests on the new head in the
// sandbox, resolves the thread of the fixed one (one reply naming the test it re-ran) and
// keeps the other open, its test still failing.
func TestModelFindingResolvedByItsEvidence(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Docker engine")
	}
	mgr := sandboxtest.Manager(t, sandboxtest.Docker(t), 2)
	engine := &evidence.Engine{Sandbox: mgr, Image: sandboxtest.Image(), Limits: sandbox.DefaultLimits(), Timeout: 2 * time.Minute,
		TempDir: t.TempDir()}
	var push atomic.Int32
	llmSrv := llmtest.OpenAI(t, modelKey)
	llmSrv.Fallback(func(req llmtest.Request, n int) llmtest.Reply {
		var comments []any
		if push.Load() == 1 {
			comments = []any{
				claim(2, "def add(a, b):", "def test_add():\n    assert add(2, 3) == 5\n"),
				claim(5, "def mul(a, b):", "def test_mul():\n    assert mul(2, 3) == 6\n"),
			}
		}
		b, _ := json.Marshal(map[string]any{"summary": "Arithmetic helpers.", "comments": comments})
		return llmtest.Reply{Text: string(b), InputTokens: 500, OutputTokens: 60}
	})
	rv := NewPipelineReviewer(PipelineOptions{Model: scriptedModel(t, llmSrv.URL, modelstep.ModelOptions{}), Evidence: engine,
		MaxEvidenceRuns: 5, TempDir: t.TempDir()})
	h := newHarness(t, harnessOptions{reviewer: rv})

	base := h.git.Commit("", "base", map[string]string{"README.md": "# calc\n"})
	buggy := "\ndef add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a + b\n"
	push.Store(1)
	head1 := h.git.Commit(base, "calc", map[string]string{"calc.py": buggy})
	h.push("ev-1", "opened", 51, base, head1, "")
	if r := h.waitHistory(51, 1, 5*time.Minute)[0]; r.Outcome != store.OutcomePosted || r.InlineComments != 2 {
		t.Fatalf("push 1: %+v", r)
	}
	for _, c := range h.fake.ReviewComments(h.owner, h.repo, 51) {
		if !strings.Contains(c.Body, "**Verified by running it.**") {
			t.Errorf("comment on line %d is not shown confirmed:\n%s", c.Line, c.Body)
		}
	}

	push.Store(2)
	head2 := h.git.Commit(head1, "fix add", map[string]string{"calc.py": strings.Replace(buggy, "a - b", "a + b", 1)})
	h.push("ev-2", "synchronize", 51, base, head2, head1)
	if r := h.waitHistory(51, 2, 5*time.Minute)[1]; r.Outcome != store.OutcomeNothingNew && r.Outcome != store.OutcomePosted {
		t.Fatalf("push 2: %+v", r)
	}
	threads := h.fake.Threads(h.owner, h.repo, 51)
	if len(threads) != 2 {
		t.Fatalf("%d threads, want 2", len(threads))
	}
	for _, th := range threads {
		switch th.Comments[0].Line {
		case 2: // add: fixed
			if !th.Resolved || th.ResolvedBy != h.fake.BotLogin() || len(th.Comments) != 2 {
				t.Fatalf("the fixed claim's thread: resolved %v by %q, %d comments", th.Resolved, th.ResolvedBy, len(th.Comments))
			}
			reply := th.Comments[1].Body
			if !strings.Contains(reply, "fixed in `"+head2[:7]+"`") || !strings.Contains(reply, "tests/test_claim_add.py") ||
				!strings.Contains(reply, "the claim no longer holds") {
				t.Errorf("reply: %q", reply)
			}
		case 5: // mul: still wrong
			if th.Resolved || len(th.Comments) != 1 {
				t.Errorf("the claim still true was resolved or answered: %+v", th)
			}
		default:
			t.Errorf("unexpected thread on line %d", th.Comments[0].Line)
		}
	}
	var summary string
	for _, c := range h.fake.IssueComments(h.owner, h.repo, 51) {
		summary = c.Body
	}
	if !strings.Contains(summary, "calc.py:5") || !strings.Contains(summary, "the claim still holds") {
		t.Errorf("summary does not list the claim still open:\n%s", summary)
	}
}

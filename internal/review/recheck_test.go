package review

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/evidence"
	"github.com/asterhq/aster/internal/repoconfig"
)

// verdicts answers each evidence run by its first file's name; it records the requests.
type verdicts struct {
	by   map[string]evidence.Verification
	reqs []evidence.Request
}

func (v *verdicts) Verify(_ context.Context, req evidence.Request) evidence.Verification {
	v.reqs = append(v.reqs, req)
	return v.by[req.Evidence.Paths()[0]]
}

// The evidence re-check: refuted resolves, confirmed and inconclusive keep the comment open
// (saying why), a comment without evidence stays out, runs stop at the cap, only the head
// runs (never the base), with the review's install step and cache.
func TestEvidenceRechecker(t *testing.T) {
	ev := func(name string) *evidence.Evidence {
		return &evidence.Evidence{Files: map[string]string{name: "x"}, Argv: []string{"python3", name}, Expect: evidence.ExpectFail}
	}
	checker := &verdicts{by: map[string]evidence.Verification{
		"fixed.py": {Status: evidence.Refuted},
		"still.py": {Status: evidence.Confirmed},
		"flaky.py": {Status: evidence.Inconclusive, Reason: "the run timed out"},
	}}
	cfg := repoconfig.Config{}
	cfg.Tests.Setup = []string{"pip", "install", "-e", "."}
	head := evidence.Target{Revision: "abc", Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("")), nil }}
	rc := RecheckerFor(checker, cfg, head, "github:o/r", "pr:1", 3)
	if rc == nil {
		t.Fatal("no rechecker")
	}
	want := []struct {
		file      string
		applies   bool
		still     bool
		checkedBy string
	}{
		{"", false, false, ""},
		{"fixed.py", true, false, "python3 fixed.py"},
		{"still.py", true, true, "re-ran python3 still.py: the claim still holds"},
		{"flaky.py", true, true, "not re-checked: the run timed out"},
		{"fixed.py", true, true, "not re-checked: over the cap of 3 evidence runs per review (model.max_evidence_runs)"},
	}
	for _, w := range want {
		c := Comment{Path: "a.py", Line: 1}
		if w.file != "" {
			c.Evidence = ev(w.file)
		}
		got, err := rc.Recheck(t.Context(), c)
		if err != nil || got.Applies != w.applies || got.Still != w.still || got.CheckedBy != w.checkedBy {
			t.Errorf("%q: %+v, %v; want applies %v still %v %q", w.file, got, err, w.applies, w.still, w.checkedBy)
		}
	}
	if len(checker.reqs) != 3 {
		t.Fatalf("%d runs, want 3 (the cap)", len(checker.reqs))
	}
	for _, r := range checker.reqs {
		if r.Base != nil || r.Head.Revision != "abc" || r.Repo != "github:o/r" || r.Scope != "pr:1" || len(r.Setup) != 4 {
			t.Errorf("request %+v", r)
		}
	}
	off := repoconfig.Config{}
	off.Model.Evidence = repoconfig.EvidenceOff
	if RecheckerFor(checker, off, head, "", "", 3) != nil || RecheckerFor(nil, cfg, head, "", "", 3) != nil {
		t.Error("a rechecker with evidence off or no engine")
	}
}

package app

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/store"
)

// TestReviewPreviousMatchesTheApp: the App on the fake GitHub and `aster review --previous`
// (the built binary) over the same history classify an earlier review's findings the same
// way: a fixed unchecked cd resolved, by the same re-run, two still open and one new, every
// entry with the same identity.
func TestReviewPreviousMatchesTheApp(t *testing.T) {
	runner := dockerGate(t, 2)
	bin := asterBinary(t)
	h := newHarness(t, harnessOptions{reviewer: NewPipelineReviewer(PipelineOptions{Gate: runner, TempDir: t.TempDir()})})
	base := h.git.Commit("", "base", map[string]string{"README.md": "# widgets\n"})
	head1 := h.git.Commit(base, "scripts", map[string]string{"run.sh": "#!/bin/sh\ncd /tmp/a\ncd /tmp/b\ncd /tmp/c\n"})
	h.push("pv-1", "opened", 31, base, head1, "")
	if r := h.waitHistory(31, 1, 4*time.Minute)[0]; r.Outcome != store.OutcomePosted {
		t.Fatalf("push 1: %+v", r)
	}
	head2 := h.git.Commit(head1, "check the first cd, add one", map[string]string{"run.sh": "#!/bin/sh\ncd /tmp/a || exit 1\ncd /tmp/b\ncd /tmp/c\ncd /tmp/d\n"})
	h.push("pv-2", "synchronize", 31, base, head2, head1)
	if r := h.waitHistory(31, 2, 4*time.Minute)[1]; r.Outcome != store.OutcomePosted {
		t.Fatalf("push 2: %+v", r)
	}
	run, found, err := h.store.Run(t.Context(), store.PullKey{Owner: h.owner, Repo: h.repo, Number: 31}, head2)
	if err != nil || !found {
		t.Fatalf("the App's run of push 2: found %v, %v", found, err)
	}
	stored, err := readStored(run.Result)
	if err != nil {
		t.Fatal(err)
	}
	app := stored.Report.Lifecycle
	if app == nil || app.Previous != head1 || len(app.Resolved) != 1 || len(app.StillOpen) != 2 || len(app.New) != 1 {
		t.Fatalf("the App's lifecycle: %+v", app)
	}

	// The same history in a clone: main at base, the branch at head1, then head2.
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", append([]string{"-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("clone", "-q", "--no-checkout", h.git.Dir, ".")
	git("branch", "-f", "main", base)
	git("checkout", "-q", "-B", "feature", head1)
	env := append(os.Environ(), "ASTER_INIT_PATH="+sandboxtest.InitBinary(t), "ASTER_IMAGES="+sandboxtest.Image())
	cli := func(args ...string) *review.Report {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"review", "--base", "main", "--format", "json", "--fail-on", "never"}, append(args, dir)...)...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("aster review %v: %v\n%s", args, err, errb.String())
		}
		var rep review.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, out.String())
		}
		return &rep
	}
	first := cli()
	before := filepath.Join(t.TempDir(), "before.json")
	b, _ := json.Marshal(first)
	if err := os.WriteFile(before, b, 0o600); err != nil {
		t.Fatal(err)
	}
	git("checkout", "-q", "-B", "feature", head2)
	local := cli("--previous", before).Lifecycle
	if local == nil || local.Previous != head1 {
		t.Fatalf("aster review --previous: lifecycle %+v", local)
	}

	// One identity and one classification: compare what each entry is, where, and (for the
	// resolved) what was run again on which head.
	type entry struct {
		Path, Fingerprint, CheckedBy, Head, Since string
		Line                                      int
	}
	entries := func(es []review.LifecycleEntry) []entry {
		out := make([]entry, 0, len(es))
		for _, e := range es {
			out = append(out, entry{Path: e.Path, Fingerprint: e.Fingerprint, CheckedBy: e.CheckedBy, Head: e.Head, Since: e.Since, Line: e.Line})
		}
		slices.SortFunc(out, func(a, b entry) int { return a.Line - b.Line })
		return out
	}
	for _, c := range []struct {
		name       string
		app, local []review.LifecycleEntry
	}{{"resolved", app.Resolved, local.Resolved}, {"still open", app.StillOpen, local.StillOpen}, {"new", app.New, local.New}} {
		if a, l := entries(c.app), entries(c.local); !slices.Equal(a, l) {
			t.Errorf("%s:\n the App:               %+v\n aster review --previous: %+v", c.name, a, l)
		}
	}
}

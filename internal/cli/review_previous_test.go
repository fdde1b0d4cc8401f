package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestReviewPrevious: `aster review --previous` re-checks what an earlier report left open
// by running the analyzers again in real sandboxes: the unchecked cd fixed by the second
// commit is resolved by shellcheck, the other is still open, nothing is new.
func TestReviewPrevious(t *testing.T) {
	sandboxtest.Docker(t)
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", append([]string{"-c", "gc.auto=0", "-c", "user.name=t", "-c", "user.email=t@example.test"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	write("README.md", "demo\n")
	git("add", ".")
	git("commit", "-q", "-m", "base")
	git("checkout", "-q", "-b", "feature")
	write("run.sh", "#!/bin/sh\ncd /tmp/a\ncd /tmp/b\n")
	git("add", ".")
	git("commit", "-q", "-m", "add run.sh")

	env := map[string]string{"ASTER_INIT_PATH": sandboxtest.InitBinary(t), "ASTER_IMAGES": sandboxtest.Image()}
	review1 := func(args ...string) (*review.Report, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := Run(t.Context(), append([]string{"review", "--base", "main", "--format", "json", "--fail-on", "never"}, append(args, dir)...),
			IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: envMap(env)})
		if code != 0 {
			t.Fatalf("exit %d\nstderr: %s", code, errb.String())
		}
		var rep review.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, out.String())
		}
		return &rep, out.String()
	}
	first, firstJSON := review1()
	var sc2164 int
	for _, f := range first.Findings {
		if f.RuleID == "SC2164" && f.Reported {
			sc2164++
		}
	}
	if sc2164 != 2 || first.Lifecycle != nil {
		t.Fatalf("first review: %d SC2164 findings (want 2), lifecycle %+v", sc2164, first.Lifecycle)
	}
	before := filepath.Join(t.TempDir(), "before.json")
	if err := os.WriteFile(before, []byte(firstJSON), 0o600); err != nil {
		t.Fatal(err)
	}

	write("run.sh", "#!/bin/sh\ncd /tmp/a || exit 1\ncd /tmp/b\n")
	git("commit", "-q", "-am", "check the first cd")
	second, _ := review1("--previous", before)
	lc := second.Lifecycle
	if lc == nil || lc.Previous != first.Head.SHA {
		t.Fatalf("lifecycle %+v", lc)
	}
	if len(lc.Resolved) != 1 || len(lc.StillOpen) != 1 || len(lc.New) != 0 {
		t.Fatalf("resolved %+v\nstill open %+v\nnew %+v", lc.Resolved, lc.StillOpen, lc.New)
	}
	if r := lc.Resolved[0]; r.Line != 2 || r.CheckedBy != "re-ran shellcheck SC2164 on this file: no longer reported" || r.Head != second.Head.SHA {
		t.Errorf("resolved %+v", r)
	}
	if o := lc.StillOpen[0]; o.Line != 3 || o.Since != first.Head.SHA {
		t.Errorf("still open %+v", o)
	}

	// A file that is not a report is refused before anything runs.
	var errb bytes.Buffer
	if code := Run(t.Context(), []string{"review", "--previous", filepath.Join(dir, "README.md"), dir},
		IO{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &errb, Getenv: envMap(env)}); code != ExitUsage || !strings.Contains(errb.String(), "--previous") {
		t.Errorf("not a report: exit %d, %s", code, errb.String())
	}
}

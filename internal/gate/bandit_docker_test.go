package gate_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/workspace"
)

// TestBanditLargeChange runs the built-in Bandit in the real image over a
// change whose one report would be over the 32 MiB output cap: 400 test
// files of asserts on long lines (Bandit quotes three lines of code with
// each result, about 6 KB here: some 36 MB in all), and one file with a
// shell injection. Run in batches, each batch's report is read under the
// cap by itself: Bandit ends ok, the injection is among the findings, and
// the findings kept stay within the reader's one bound, the notes dropped
// first.
func TestBanditLargeChange(t *testing.T) {
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	const files, asserts = 400, 15
	long := strings.Repeat("a", 2000)
	var src strings.Builder
	src.WriteString("def test_it(x):\n")
	for i := 0; i < asserts; i++ {
		fmt.Fprintf(&src, "    assert x != %d, %q\n", i, long)
	}
	repo := map[string][]byte{
		"app/run.py": []byte("import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"),
	}
	for i := 0; i < files; i++ {
		repo[fmt.Sprintf("tests/test_%03d.py", i)] = []byte(src.String())
	}
	snap := largeSnapshot(t, repo)
	bandit, ok := gate.Lookup(gate.Builtins(), "bandit")
	if !ok {
		t.Fatal("no built-in bandit")
	}
	r := gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()})
	res := r.Run(context.Background(), gate.Request{Snapshot: snap, Analyzers: []gate.Analyzer{bandit}})
	st := res.Analyzers[0]
	if st.Status != gate.StatusOK {
		t.Fatalf("bandit: %s %q (exit %d, stderr %s)", st.Status, st.Reason, st.ExitCode, st.Stderr)
	}
	if st.Batches < 2 || st.TargetFiles != files+1 {
		t.Errorf("ran in %d batches over %d files; want 2 or more over %d", st.Batches, st.TargetFiles, files+1)
	}
	var shell, notes int
	for _, f := range res.Findings {
		switch {
		case f.RuleID == "B602" && f.Path == "app/run.py" && f.StartLine == 5:
			shell++
		case f.RuleID == "B101":
			notes++
		}
	}
	// 6,002 results (the import of subprocess is one, B404), at most
	// finding.DefaultMaxFindings kept: the rest of the asserts are counted
	// as dropped, the injection is not one of them
	if shell != 1 || notes == 0 || st.Findings != len(res.Findings) || st.Findings > finding.DefaultMaxFindings || st.Findings+st.Dropped != files*asserts+2 {
		t.Errorf("%d findings (%d read; %d B602 on app/run.py:5, %d B101), %d dropped; want the B602, at most %d findings, the rest of %d dropped",
			len(res.Findings), st.Findings, shell, notes, st.Dropped, finding.DefaultMaxFindings, files*asserts+2)
	}
}

// largeSnapshot is a snapshot of files, with room for hundreds of them.
func largeSnapshot(t *testing.T, files map[string][]byte) *gate.Snapshot {
	t.Helper()
	caps := workspace.Caps{MaxBytes: 256 << 20, MaxFiles: 10000}
	var buf bytes.Buffer
	if _, err := workspace.PackFiles(files, &buf, caps); err != nil {
		t.Fatal(err)
	}
	s, err := gate.SpoolSnapshot(&buf, t.TempDir(), caps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Remove() })
	return s
}

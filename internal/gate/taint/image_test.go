package taint_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/workspace"
)

func snapshot(t *testing.T, files map[string][]byte) *gate.Snapshot {
	t.Helper()
	caps := workspace.Caps{MaxBytes: 256 << 20, MaxFiles: 1000}
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

// TestPythonFixturesInImage runs the built-in taint-python analyzer, as the
// gate runs it, in the real image on Docker over every Python fixture: each
// marked sink is found on its line with a flow from its source, and nothing
// else is reported. The snapshot also holds a pathological file (1 MB of one
// expression) that is left out and named, without stalling the run.
func TestPythonFixturesInImage(t *testing.T) {
	files, want := fixtures(t, "python")
	files["huge/expr.py"] = []byte("x = " + strings.Repeat("a + ", 250000) + "a\n")
	// The repository's files are parsed, never imported: these would end the
	// engine if its own imports or the standard library's found them first.
	files["json.py"] = []byte("raise SystemExit(3)\n")
	files["aster_rules.py"] = []byte("raise SystemExit(4)\n")
	files["sitecustomize.py"] = []byte("raise SystemExit(5)\n")
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	a, ok := gate.Lookup(gate.Builtins(), gate.TaintPython)
	if !ok {
		t.Fatal("no taint-python analyzer")
	}
	res := gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()}).Run(context.Background(),
		gate.Request{Snapshot: snapshot(t, files), Analyzers: []gate.Analyzer{a}})
	ar := res.Analyzers[0]
	if ar.Status != gate.StatusOK {
		t.Fatalf("analyzer %+v", ar)
	}
	if ar.Stats == nil || ar.Stats.Files < 30 || ar.Stats.MaxRSSKB <= 0 {
		t.Errorf("stats %+v", ar.Stats)
	}
	named := false
	for _, n := range ar.Notices {
		if n.Path == "huge/expr.py" && strings.Contains(n.Text, "huge/expr.py skipped") {
			named = true
		}
	}
	if !named {
		t.Errorf("the pathological file is not named: %+v", ar.Notices)
	}
	checkFixtures(t, res.Findings, want)
}

package gate

import (
	"archive/tar"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace/workspacetest"
)

// entries reads a tar's regular files (with their content) and directories.
func entries(t *testing.T, r io.Reader) (files map[string]string, dirs []string) {
	t.Helper()
	files = map[string]string{}
	for _, e := range workspacetest.Entries(t, r) {
		switch e.Typeflag {
		case tar.TypeDir:
			dirs = append(dirs, strings.TrimSuffix(e.Name, "/"))
		case tar.TypeReg:
			files[e.Name] = e.Data
		default:
			t.Errorf("entry %s of type %q", e.Name, e.Typeflag)
		}
	}
	return files, dirs
}

// OpenOnly gives the files asked for, with their content, and the
// directories above them: nothing else.
func TestSnapshotOpenOnly(t *testing.T) {
	snap := snapshotOf(t, map[string]string{
		"a/b/c.py": "c\n", "a/b/d.py": "d\n", "a/e.py": "e\n", "f/g/h.txt": "h\n", "top.py": "top\n",
	})
	r, err := snap.OpenOnly([]string{"a/b/c.py", "top.py"})
	if err != nil {
		t.Fatal(err)
	}
	files, dirs := entries(t, r)
	r.Close()
	if len(files) != 2 || files["a/b/c.py"] != "c\n" || files["top.py"] != "top\n" {
		t.Errorf("files %v, want a/b/c.py and top.py", files)
	}
	for _, d := range dirs {
		if d != "a" && d != "a/b" {
			t.Errorf("directory %s is above no file asked for", d)
		}
	}
	// every file: the snapshot as it is
	r, err = snap.OpenOnly(snap.Files())
	if err != nil {
		t.Fatal(err)
	}
	files, _ = entries(t, r)
	r.Close()
	if len(files) != 5 {
		t.Errorf("every file asked for: %d given", len(files))
	}
	// a reader closed early stops the copy (the writer's error is the
	// closed pipe, and the snapshot can be opened again)
	r, err = snap.OpenOnly([]string{"a/e.py"})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := r.Read(make([]byte, 1)); err == nil {
		t.Error("read after close succeeded")
	}
}

// wsSandbox records the files each sandbox's workspace holds, by argv[0].
type wsSandbox struct {
	got map[string][]string
}

func (w *wsSandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	if spec.Stdin != nil {
		_, _ = io.Copy(io.Discard, spec.Stdin)
	}
	var names []string
	if spec.Workspace.Tar != nil {
		// off the test goroutine: a broken archive lists what was read
		all, _ := workspacetest.Read(spec.Workspace.Tar)
		for _, e := range all {
			if e.Typeflag == tar.TypeReg {
				names = append(names, e.Name)
			}
		}
	}
	slices.Sort(names)
	w.got[spec.Argv[0]] = names
	out := `{"errors":[],"results":[]}`
	if spec.Argv[0] == "gitleaks" {
		out = `[]`
	}
	return sandbox.Result{ID: "x", Status: sandbox.StatusOK, Stdout: sandbox.Output{Data: []byte(out)}}, nil
}

// An analyzer marked TargetsOnly gets a /work holding its target files only
// (the changed ones, those its globs match, those the policy leaves it);
// the others get the whole snapshot. gitleaks reads every changed file,
// tests too, but never a .gitleaksignore.
func TestRunnerTargetsOnly(t *testing.T) {
	snap := snapshotOf(t, map[string]string{
		"app/a.py": "x = 1\n", "app/b.py": "y = 2\n", "tests/test_a.py": "assert 1\n",
		"lib/c.js": "z\n", ".gitleaksignore": "app/a.py:generic-api-key:1\n", "README.md": "# r\n",
	})
	gitleaks, _ := Lookup(Builtins(), "gitleaks")
	gitleaks.Command = []string{"gitleaks"}
	bandit := Analyzer{Name: "bandit", Command: []string{"bandit"}, Input: InputFiles0, Format: finding.FormatBandit, Files: []string{"*.py"}, TargetsOnly: true}
	whole := Analyzer{Name: "whole", Command: []string{"whole"}, Input: InputFiles0, Format: finding.FormatBandit, Files: []string{"*.py"}}
	sb := &wsSandbox{got: map[string][]string{}}
	req := Request{Snapshot: snap, Analyzers: []Analyzer{gitleaks, bandit, whole}, Policy: DefaultPolicy(),
		Changed: []string{"app/a.py", "tests/test_a.py", "lib/c.js", ".gitleaksignore"}}
	res := NewRunner(sb, RunnerOptions{Image: "img"}).Run(context.Background(), req)
	for _, a := range res.Analyzers {
		if a.Status != StatusOK || a.Name != "whole" && a.TargetFiles != len(sb.got[a.Name]) {
			t.Errorf("%s: %s %q, %d target files for %d given", a.Name, a.Status, a.Reason, a.TargetFiles, len(sb.got[a.Name]))
		}
	}
	want := map[string][]string{
		"gitleaks": {"app/a.py", "lib/c.js", "tests/test_a.py"},
		"bandit":   {"app/a.py"},
		"whole":    snap.Files(),
	}
	for name, w := range want {
		if !slices.Equal(sb.got[name], w) {
			t.Errorf("%s's /work holds %v, want %v", name, sb.got[name], w)
		}
	}
	// nothing changed: gitleaks has nothing to read
	req.Changed = []string{}
	res = NewRunner(sb, RunnerOptions{Image: "img"}).Run(context.Background(), Request{Snapshot: snap, Analyzers: []Analyzer{gitleaks}, Changed: []string{}})
	if st := res.Analyzers[0]; st.Status != StatusSkipped {
		t.Errorf("nothing changed: gitleaks %s %q, want skipped", st.Status, st.Reason)
	}
}

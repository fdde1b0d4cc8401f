package gate

import (
	"bytes"
	"errors"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
	"github.com/asterhq/aster/internal/workspace/workspacetest"
)

func tarOf(t *testing.T, files map[string]string) []byte {
	return workspacetest.Tar(t, files, workspace.Caps{})
}

func newTestValidator(fake *fakeSandbox) *Validator {
	analyzers := []Analyzer{
		{Name: "sarif-tool", Command: []string{"sarif-tool", "{files}"}, Format: finding.FormatSARIF, Files: []string{"*.sh"}},
		{Name: "other", Command: []string{"other", "."}, Format: finding.FormatSARIF},
	}
	return NewValidator(NewRunner(fake, RunnerOptions{}), analyzers)
}

// snapshotOf spools a tar of files as the HTTP layer does.
func snapshotOf(t *testing.T, files map[string]string) *Snapshot {
	t.Helper()
	snap, err := SpoolSnapshot(bytes.NewReader(tarOf(t, files)), t.TempDir(), workspace.Caps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Remove() })
	return snap
}

func TestValidate(t *testing.T) {
	fake := newFake(func(spec sandbox.Spec) (sandbox.Result, error) {
		if spec.Argv[0] == "other" {
			return ok(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"o"}},"results":[{"ruleId":"X","message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"b.sh"},"region":{"startLine":1}}}]}]}]}`, 0), nil
		}
		return ok(oneSARIF, 0), nil
	})
	v := newTestValidator(fake)
	snap := snapshotOf(t, map[string]string{"a.sh": "echo $1\n", "b.sh": "echo\n"})

	resp, err := v.Validate(t.Context(), ValidateInput{Snapshot: snap, Analyzers: []string{"sarif-tool", "other"}, ChangedFiles: []string{"a.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Analyzers) != 2 || resp.Analyzers[0].Status != StatusOK || resp.Analyzers[0].TargetFiles != 1 {
		t.Errorf("analyzers %+v", resp.Analyzers)
	}
	if resp.Summary.Total != 2 || resp.Summary.Reported != 1 {
		t.Errorf("summary %+v (only a.sh is changed)", resp.Summary)
	}
	for _, f := range resp.Findings {
		if f.Reported != (f.Path == "a.sh") {
			t.Errorf("finding %s reported=%v", f.Path, f.Reported)
		}
	}
	// Without changed files nothing is filtered: every finding is reported.
	resp, err = v.Validate(t.Context(), ValidateInput{Snapshot: snap, Analyzers: []string{"other"}})
	if err != nil || resp.Summary.Total != 1 || resp.Summary.Reported != 1 {
		t.Errorf("unfiltered %+v %v", resp.Summary, err)
	}

	for name, in := range map[string]ValidateInput{
		"unknown analyzer":   {Snapshot: snap, Analyzers: []string{"nope"}},
		"too many analyzers": {Snapshot: snap, Analyzers: []string{"a", "b", "c"}},
		"too many changed":   {Snapshot: snap, ChangedFiles: make([]string, MaxChangedFiles+1)},
	} {
		if _, err := v.Validate(t.Context(), in); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

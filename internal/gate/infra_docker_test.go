package gate_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestInfraAnalyzersOptional runs each of the workflow, IaC and C/C++
// analyzers in the real image with its tool renamed to one the image lacks:
// it is skipped, naming the tool, rather than failing the review.
func TestInfraAnalyzersOptional(t *testing.T) {
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	snap := astGrepSnapshot(t, map[string][]byte{
		".github/workflows/ci.yml": []byte("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo hi\n"),
		"main.tf":                  []byte("resource \"random_id\" \"x\" {\n  byte_length = 8\n}\n"),
		"Dockerfile":               []byte("FROM debian:13\n"),
		"x.c":                      []byte("int main(void) { return 0; }\n"),
	})
	r := gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()})
	for _, name := range []string{"actionlint", "tfsec", "kics", "cppcheck", "flawfinder"} {
		a, ok := gate.Lookup(gate.Builtins(), name)
		if !ok {
			t.Fatalf("no built-in %s", name)
		}
		a.Command = slices.Clone(a.Command)
		// The tool is the argv element, or the program of the sh -c script.
		for i, arg := range a.Command {
			if arg == name && i > 0 && a.Command[i-1] != "-c" && a.Command[0] != "sh" {
				a.Command[i] = "aster-no-such-tool"
			}
		}
		if a.Command[0] == "sh" {
			a.Command[2] = strings.ReplaceAll(a.Command[2], name+` "$@"`, `aster-no-such-tool "$@"`)
		}
		res := r.Run(context.Background(), gate.Request{Snapshot: snap, Analyzers: []gate.Analyzer{a}})
		if st := res.Analyzers[0]; st.Status != gate.StatusSkipped || st.Reason != name+" is not installed in image "+sandboxtest.Image() {
			t.Errorf("%s: %s %q (exit %d, stderr %s)", name, st.Status, st.Reason, st.ExitCode, st.Stderr)
		}
	}
}

package oci_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestRunThroughManager is the smoke test: a job through the Manager on the
// oci runtime gets the same Result fields as on Docker.
func TestRunThroughManager(t *testing.T) {
	rt := ocitest.Runtime(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	res, err := mgr.Run(t.Context(), sandbox.Spec{
		Argv:      []string{"sh", "-c", "echo hello; echo err >&2; id -u; cat data.txt; exit 3"},
		Workspace: sandbox.Workspace{Files: map[string][]byte{"data.txt": []byte("from the workspace\n")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 3 {
		t.Fatalf("status %s exit %d: %+v", res.Status, res.ExitCode, res.Wire())
	}
	lines := strings.Split(string(res.Stdout.Data), "\n")
	if uid, err := strconv.Atoi(lines[min(1, len(lines)-1)]); len(lines) != 4 || lines[0] != "hello" || err != nil || uid < runtimekit.DefaultIdentityBase ||
		lines[2] != "from the workspace" {
		t.Fatalf("stdout %q, want hello, a sandbox uid, the workspace file", res.Stdout.Data)
	}
	if got := string(res.Stderr.Data); got != "err\n" {
		t.Fatalf("stderr %q", got)
	}
	if res.Runtime != "oci" || !strings.HasPrefix(res.ImageDigest, "sha256:") || res.PeakMemoryBytes <= 0 {
		t.Fatalf("result fields: %+v", res.Wire())
	}
	for _, k := range []string{"create", "start", "init", "job", "prepare", "total"} {
		if _, ok := res.Timings[k]; !ok {
			t.Errorf("timing %q missing: %v", k, res.Timings)
		}
	}
}

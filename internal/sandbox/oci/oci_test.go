package oci_test

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
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
	if got := string(res.Stdout.Data); got != "hello\n1000\nfrom the workspace\n" {
		t.Fatalf("stdout %q", got)
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

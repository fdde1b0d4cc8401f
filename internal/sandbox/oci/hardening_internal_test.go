package oci

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/hardening"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// TestBundleCarriesAsterProfile checks that every bundle's seccomp section is
// the Aster profile, byte for byte what the Docker runtime sends the engine,
// and that the masked and read-only paths are the shared lists.
func TestBundleCarriesAsterProfile(t *testing.T) {
	base, err := newSpecBase("")
	if err != nil {
		t.Fatal(err)
	}
	want, err := hardening.SeccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	l := sandbox.Limits{TimeoutMS: 1000, MemoryBytes: 64 << 20, MilliCPUs: 100, Pids: 16, WorkdirBytes: 1 << 20, TmpBytes: 1 << 20}
	s := base.bundleSpec(sandbox.PrepareOptions{RunID: "r-1", Limits: l, Deadline: time.Now().Add(time.Minute)}, runtimekit.Identity{Init: 1_900_000_000, Job: 1_900_000_001}, "r-1", "/cache/rootfs/x", "/opt/aster-init", nil)
	got, err := json.Marshal(s.Linux.Seccomp)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("bundle seccomp section differs from the Aster profile (%d vs %d bytes)", len(got), len(want))
	}
	if !slices.Equal(s.Linux.MaskedPaths, hardening.MaskedPaths()) || !slices.Equal(s.Linux.ReadonlyPaths, hardening.ReadonlyPaths()) {
		t.Errorf("masked %v read-only %v, want the shared lists", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
	}
}

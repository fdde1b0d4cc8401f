package docker

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/hardening"
)

// TestContainerCarriesAsterProfile checks, without an engine, that every
// container is created with the Aster seccomp profile inline — the very bytes
// the oci runtime decodes into its bundles — and with the shared masked and
// read-only paths, whatever the limits say.
func TestContainerCarriesAsterProfile(t *testing.T) {
	self, err := os.Executable() // any executable stands in for aster-init
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{InitPath: self})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want, err := hardening.SeccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []sandbox.Limits{
		{TimeoutMS: 1000, MemoryBytes: 64 << 20, MilliCPUs: 100, Pids: 16, WorkdirBytes: 1 << 20, TmpBytes: 1 << 20},
		{TimeoutMS: 3_600_000, MemoryBytes: 8 << 30, MilliCPUs: 8000, Pids: 4096, WorkdirBytes: 8 << 30, TmpBytes: 8 << 30},
	} {
		_, host := r.containerConfig(sandbox.PrepareOptions{RunID: "r-1", Image: "img", Limits: l, Deadline: time.Now().Add(time.Minute)}, sandbox.Identity{Init: 1_900_000_000, Job: 1_900_000_001})
		var profiles [][]byte
		nnp := false
		for _, o := range host.SecurityOpt {
			if p, ok := strings.CutPrefix(o, "seccomp="); ok {
				profiles = append(profiles, []byte(p))
			}
			nnp = nnp || o == "no-new-privileges"
		}
		if len(profiles) != 1 || !bytes.Equal(profiles[0], want) {
			t.Fatalf("SecurityOpt carries %d seccomp profiles; want exactly the Aster profile", len(profiles))
		}
		if !nnp {
			t.Errorf("no-new-privileges missing from %v", host.SecurityOpt)
		}
		if !slices.Equal(host.MaskedPaths, hardening.MaskedPaths()) || !slices.Equal(host.ReadonlyPaths, hardening.ReadonlyPaths()) {
			t.Errorf("masked %v read-only %v, want the shared lists", host.MaskedPaths, host.ReadonlyPaths)
		}
	}
}

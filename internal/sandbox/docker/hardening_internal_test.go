package docker

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/hardening"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// standInInit is an executable that stands in for aster-init where nothing
// runs it (the test binary itself would not do: it may be linked with cgo,
// which CheckInitBinary refuses).
func standInInit(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "aster-init")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestContainerCarriesAsterProfile checks, without an engine, that every
// container is created with the Aster seccomp profile inline — the very bytes
// the oci runtime decodes into its bundles — and with the shared masked and
// read-only paths, whatever the limits say.
func TestContainerCarriesAsterProfile(t *testing.T) {
	self := standInInit(t)
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
		_, host := r.containerConfig(sandbox.PrepareOptions{RunID: "r-1", Image: "img", Limits: l, Deadline: time.Now().Add(time.Minute)}, runtimekit.Identity{Init: 1_900_000_000, Job: 1_900_000_001})
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

// TestGVisorEngineRuntimeLimitsTasksInside: with an engine runtime that is
// gVisor's, the pids limit moves inside gVisor's kernel (RLIMIT_NPROC of the
// job's uid) and the container's pids cgroup bounds the sandbox as a whole;
// with any other runtime the cgroup is the job's limit and no nproc is set.
func TestGVisorEngineRuntimeLimitsTasksInside(t *testing.T) {
	self := standInInit(t)
	l := sandbox.Limits{TimeoutMS: 1000, MemoryBytes: 64 << 20, MilliCPUs: 100, Pids: 64, WorkdirBytes: 1 << 20, TmpBytes: 1 << 20}
	for _, engine := range []string{"", "runc", "kata-runtime", "runsc", "runsc-aster"} {
		r, err := New(Options{InitPath: self, EngineRuntime: engine})
		if err != nil {
			t.Fatal(err)
		}
		_, host := r.containerConfig(sandbox.PrepareOptions{RunID: "r-1", Image: "img", Limits: l, Deadline: time.Now().Add(time.Minute)}, runtimekit.Identity{Init: 1_900_000_000, Job: 1_900_000_001})
		r.Close()
		var nproc *int64
		for _, u := range host.Ulimits {
			if u.Name == "nproc" {
				nproc = &u.Hard
			}
		}
		gvisor := strings.HasPrefix(engine, "runsc")
		switch {
		case gvisor && (nproc == nil || *nproc != l.Pids-1 || *host.PidsLimit <= 8*l.Pids):
			t.Errorf("%s: nproc %v, pids cgroup %d; want nproc %d inside and a larger cgroup bound", engine, nproc, *host.PidsLimit, l.Pids-1)
		case !gvisor && (nproc != nil || *host.PidsLimit != l.Pids):
			t.Errorf("%s: nproc %v, pids cgroup %d; want no nproc and the job's limit %d", engine, nproc, *host.PidsLimit, l.Pids)
		}
	}
}

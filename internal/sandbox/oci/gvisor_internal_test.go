package oci

import (
	"slices"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// The -platform help of the two runsc builds Aster is tested with, as
// `runsc flags` prints it.
const (
	flagsDebian12 = "  -pod-init-config string\n    \tpath to configuration file with additional steps to take during pod creation.\n  -platform string\n    \tspecifies which platform to use: ptrace (default), kvm. (default \"ptrace\")\n  -platform_device_path string\n"
	flagsCurrent  = "  -platform string\n    \tspecifies which platform to use: systrap (default), ptrace, kvm. (default \"systrap\")\n  -platform_device_path string\n    \tpath to a platform-specific device file (e.g. /dev/kvm for KVM platform).\n"
)

func TestParsePlatforms(t *testing.T) {
	for _, c := range []struct {
		name, flags string
		want        []string
	}{
		{"debian 12", flagsDebian12, []string{PlatformPtrace, PlatformKVM}},
		{"current", flagsCurrent, []string{PlatformSystrap, PlatformPtrace, PlatformKVM}},
		{"no platform flag", "  -network value\n    \tspecifies which network to use: sandbox (default), host, none.\n", nil},
		// Only the -platform flag's own line counts, not a word elsewhere.
		{"systrap elsewhere", "  -systrap-disable-fast-path\n    \tdisables systrap.\n  -platform string\n    \twhich platform: ptrace.\n", []string{PlatformPtrace}},
		{"empty", "", nil},
	} {
		if got := parsePlatforms([]byte(c.flags)); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// FuzzParsePlatforms: whatever a binary prints, the answer only ever names
// known platforms, each once, in Aster's order.
func FuzzParsePlatforms(f *testing.F) {
	for _, s := range []string{flagsDebian12, flagsCurrent, "", "  -platform\n", "  -platform x\n\t:::systrap,systrap kvm"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := parsePlatforms(b)
		last := -1
		for _, p := range got {
			i := slices.Index(Platforms, p)
			if i <= last {
				t.Fatalf("%q: %v is not a list of known platforms in order", b, got)
			}
			last = i
		}
	})
}

// TestAdaptForGVisor: a runsc bundle moves the pids limit inside gVisor
// (RLIMIT_NPROC of the job's uid, one less than pids) and bounds the whole
// sandbox in the host cgroup by platform, at what the sandbox is charged of
// the host task budget less the runtime's own process; nothing else of the
// bundle changes.
func TestAdaptForGVisor(t *testing.T) {
	base, err := newSpecBase("")
	if err != nil {
		t.Fatal(err)
	}
	l := sandbox.Limits{TimeoutMS: 1000, MemoryBytes: 256 << 20, MilliCPUs: 1000, Pids: 64, WorkdirBytes: 8 << 20, TmpBytes: 4 << 20}
	ident := runtimekit.Identity{Init: 1_900_000_010, Job: 1_900_000_011}
	for _, c := range []struct {
		platform string
		host     int64
	}{{PlatformSystrap, 4*64 + 512}, {PlatformPtrace, 64*64 + 512}, {"", 64*64 + 512}} {
		s := base.bundleSpec(sandbox.PrepareOptions{RunID: "r-1", Limits: l, Deadline: time.Now()}, ident, "r-1", "/cache/x", "/opt/aster-init", nil)
		before := len(s.Process.Rlimits)
		r := &Runtime{kind: "runsc", gvisor: GVisorInfo{Platform: c.platform}}
		adaptForGVisor(s, l, r.sandboxPids(l))
		var nproc *specs.POSIXRlimit
		for i, r := range s.Process.Rlimits {
			if r.Type == "RLIMIT_NPROC" {
				nproc = &s.Process.Rlimits[i]
			}
		}
		if nproc == nil || nproc.Hard != 63 || nproc.Soft != 63 || len(s.Process.Rlimits) != before+1 {
			t.Errorf("%q: rlimits %+v, want RLIMIT_NPROC 63 added", c.platform, s.Process.Rlimits)
		}
		if got := *s.Linux.Resources.Pids.Limit; got != c.host {
			t.Errorf("%q: host pids %d, want %d", c.platform, got, c.host)
		}
		if got := r.HostTasks(l); got != c.host+runtimeProcessTasks {
			t.Errorf("%q: charged %d host tasks, want %d", c.platform, got, c.host+runtimeProcessTasks)
		}
	}
	// The crun bundle of the same base is untouched.
	s := base.bundleSpec(sandbox.PrepareOptions{RunID: "r-1", Limits: l, Deadline: time.Now()}, ident, "r-1", "/cache/x", "/opt/aster-init", nil)
	if *s.Linux.Resources.Pids.Limit != 64 {
		t.Errorf("crun bundle pids %d", *s.Linux.Resources.Pids.Limit)
	}
	if got := (&Runtime{kind: "crun"}).HostTasks(l); got != 64+runtimeProcessTasks {
		t.Errorf("crun sandbox charged %d host tasks, want %d", got, 64+runtimeProcessTasks)
	}
}

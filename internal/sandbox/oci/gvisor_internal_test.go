package oci

import (
	"slices"
	"testing"
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

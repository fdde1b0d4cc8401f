package config

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/remote"
)

// TestWireLimitsResolveBack: limits a remote sandbox sends (remote.WireLimits)
// come back unchanged through the server's resolver. It lives here, not in
// remote, because no package under internal/sandbox imports config.
func TestWireLimitsResolveBack(t *testing.T) {
	full := sandbox.Limits{TimeoutMS: 1500, MemoryBytes: 64 << 20, MilliCPUs: 250, Pids: 64, OutputBytes: 4096,
		OutputCeilingBytes: 1 << 20, WorkdirBytes: 8 << 20, TmpBytes: 4 << 20}
	w := remote.WireLimits(full)
	back, err := ResolveLimits(LimitsConfig{Timeout: string(w.Timeout), Memory: string(w.Memory), CPUs: string(w.CPUs),
		Pids: string(w.Pids), OutputLimit: string(w.OutputLimit), OutputCeiling: string(w.OutputCeiling),
		WorkdirSize: string(w.WorkdirSize), TmpSize: string(w.TmpSize)}, sandbox.DefaultLimits(), sandbox.Limits{})
	if err != nil || back != full {
		t.Errorf("%+v came back as %+v (%v)", full, back, err)
	}
}

// TestDefaultsAgree: a default a package keeps for itself, because it cannot
// import the package that owns it, is the owner's.
func TestDefaultsAgree(t *testing.T) {
	if remote.DefaultMaxStdinBytes != DefaultMaxBodyBytes {
		t.Errorf("remote.DefaultMaxStdinBytes %d, the server's default --max-body %d", remote.DefaultMaxStdinBytes, DefaultMaxBodyBytes)
	}
}

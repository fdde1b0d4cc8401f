package remote

import (
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
)

// Limits go to the wire in the API's units, and the server's resolver reads
// them back unchanged.
func TestWireLimits(t *testing.T) {
	l := WireLimits(sandbox.Limits{TimeoutMS: 1500, MemoryBytes: 1 << 20, MilliCPUs: 250})
	if want := (api.Limits{Timeout: "1500ms", Memory: "1048576", CPUs: "0.25"}); l != want {
		t.Errorf("wire limits %+v, want %+v", l, want)
	}
	if l := WireLimits(sandbox.Limits{}); l != (api.Limits{}) {
		t.Errorf("zero limits sent as %+v", l)
	}
	full := sandbox.Limits{TimeoutMS: 1500, MemoryBytes: 64 << 20, MilliCPUs: 250, Pids: 64, OutputBytes: 4096,
		OutputCeilingBytes: 1 << 20, WorkdirBytes: 8 << 20, TmpBytes: 4 << 20}
	w := WireLimits(full)
	back, err := config.ResolveLimits(config.LimitsConfig{Timeout: string(w.Timeout), Memory: string(w.Memory), CPUs: string(w.CPUs),
		Pids: string(w.Pids), OutputLimit: string(w.OutputLimit), OutputCeiling: string(w.OutputCeiling),
		WorkdirSize: string(w.WorkdirSize), TmpSize: string(w.TmpSize)}, sandbox.DefaultLimits(), sandbox.Limits{})
	if err != nil || back != full {
		t.Errorf("%+v came back as %+v (%v)", full, back, err)
	}
}

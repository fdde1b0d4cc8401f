package remote

import (
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// Limits go to the wire in the API's units (that the server's resolver reads
// them back unchanged is config's TestWireLimitsResolveBack).
func TestWireLimits(t *testing.T) {
	l := WireLimits(sandbox.Limits{TimeoutMS: 1500, MemoryBytes: 1 << 20, MilliCPUs: 250})
	if want := (api.Limits{Timeout: "1500ms", Memory: "1048576", CPUs: "0.25"}); l != want {
		t.Errorf("wire limits %+v, want %+v", l, want)
	}
	if l := WireLimits(sandbox.Limits{}); l != (api.Limits{}) {
		t.Errorf("zero limits sent as %+v", l)
	}
}

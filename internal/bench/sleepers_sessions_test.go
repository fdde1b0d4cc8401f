package bench_test

import (
	"testing"
	"time"

	"github.com/asterhq/aster/internal/bench"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestSleepersSessionsOCI: the sessions mode holds N idle sessions through a
// real server and reads each one's memory while all are held.
func TestSleepersSessionsOCI(t *testing.T) {
	opts := ocitest.Options(t)
	ocitest.New(t, opts) // skips where the oci runtime cannot run; exports the image
	// The server (a child process) uses this test's state and image cache.
	t.Setenv("ASTER_OCI_STATE_DIR", opts.StateDir)
	t.Setenv("ASTER_OCI_CACHE_DIR", opts.CacheDir)
	rep, err := bench.Sleepers(t.Context(), bench.SleepersConfig{
		Runtime: "oci", N: 3, Pids: 16, Sessions: true, Hold: time.Second, StartWindow: 15 * time.Second,
		Aster:     sandboxtest.AsterBinary(t),
		ServeArgs: []string{"--init-path", opts.InitPath},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || !rep.Sessions || rep.Errors != 0 || rep.PeakUp != 3 {
		t.Fatalf("report %+v", rep)
	}
	if rep.MemoryAt != 3 || rep.CgroupsN != 3 || rep.PerSandboxPSS <= 0 || rep.PerSandboxCgroup <= 0 || rep.OrchRSSHeld <= 0 {
		t.Fatalf("memory not read for the 3 sessions: %+v", rep)
	}
}

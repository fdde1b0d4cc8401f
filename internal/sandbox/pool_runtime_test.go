package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestWarmPoolOnRealRuntimes runs jobs from the warm pool of each runtime:
// every run is served warm, by a sandbox nobody used before, with the right
// output; and once the Manager is closed nothing of the pool is left.
func TestWarmPoolOnRealRuntimes(t *testing.T) {
	for _, name := range []string{"docker", "oci"} {
		t.Run(name, func(t *testing.T) {
			var rt sandbox.Runtime
			if name == "docker" {
				rt = sandboxtest.Docker(t)
			} else {
				rt = ocitest.Runtime(t)
			}
			m, err := sandbox.NewManager(sandbox.ManagerOptions{
				Runtime: rt, Images: []string{sandboxtest.Image()}, Defaults: sandbox.DefaultLimits(),
				Bounds: sandbox.LimitBounds(), MaxConcurrent: 4, QueueSize: 16, QueueTimeout: time.Minute,
				Pool: sandbox.PoolOptions{Warm: 2, BackgroundClose: true},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			seen := map[string]bool{}
			for i := range 4 {
				if err := m.WaitWarm(ctx); err != nil {
					t.Fatal(err)
				}
				res, err := m.Run(ctx, sandbox.Spec{Argv: []string{"sh", "-c", "cat /proc/sys/kernel/random/boot_id >/dev/null; ls /work | wc -l; echo $X"}, Env: map[string]string{"X": "job"}})
				if err != nil || res.Status != sandbox.StatusOK {
					t.Fatalf("run %d: %v %+v", i, err, res.Wire())
				}
				if _, warm := res.Timings["warm"]; !warm {
					t.Fatalf("run %d went cold: %v", i, res.Timings)
				}
				if got := string(res.Stdout.Data); got != "0\njob\n" {
					t.Fatalf("run %d stdout %q", i, got)
				}
				if res.Runtime != name {
					t.Fatalf("runtime %q", res.Runtime)
				}
				if seen[res.ID] {
					t.Fatalf("run id %s twice", res.ID)
				}
				seen[res.ID] = true
			}
			if err := m.Close(ctx); err != nil {
				t.Fatal(err)
			}
			list, err := rt.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range list {
				if m.Holds(s.ID) {
					t.Errorf("closed manager still holds %s", s.ID)
				}
			}
			// The oci state directory is this test's own: it must be empty.
			if name == "oci" && len(list) != 0 {
				t.Errorf("sandboxes left after Close: %+v", list)
			}
			if got := m.Stats().Running; got != 0 {
				t.Fatalf("%d slots held after Close", got)
			}
		})
	}
}

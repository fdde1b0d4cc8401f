package microvm_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testkit"
)

// TestBootProbe boots ASTER_MICROVM_BOOT_PROBE VMs, two at a time, and
// reports how long each took to aster-init's hello; it fails if any boot
// failed or any guest stayed silent (the runtime's one fresh boot hides a
// silence from the caller, so its warning is counted). A measurement, not a
// CI test: run it beside load (stress-ng) to look for rare boot failures.
//
//	ASTER_MICROVM_BOOT_PROBE=400 go test -run TestBootProbe -timeout 2h -v ./internal/sandbox/microvm/
func TestBootProbe(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ASTER_MICROVM_BOOT_PROBE"))
	if n <= 0 {
		t.Skip("set ASTER_MICROVM_BOOT_PROBE=N (boots to run)")
	}
	opts := microvmtest.Options(t)
	logs := &testkit.SyncBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	rt := microvmtest.New(t, opts)

	var (
		mu    sync.Mutex
		times []time.Duration
		errs  []string
		wg    sync.WaitGroup
	)
	slots := make(chan struct{}, 2)
	for range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			t0 := time.Now()
			inst, err := rt.Prepare(ctx, sandbox.PrepareOptions{Image: sandboxtest.Image(), Limits: sandbox.DefaultLimits(), Deadline: time.Now().Add(5 * time.Minute)})
			took := time.Since(t0)
			if err == nil {
				inst.Close(context.Background())
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			times = append(times, took)
		})
	}
	wg.Wait()
	if len(times) > 0 {
		slices.Sort(times)
		q := func(f float64) time.Duration { return times[int(f*float64(len(times)-1))].Round(time.Millisecond) }
		t.Logf("%d boots to hello: p50 %s, p90 %s, max %s", len(times), q(0.5), q(0.9), q(1))
	}
	if s := strings.Count(logs.String(), "did not come up"); s > 0 {
		t.Errorf("%d of %d guests said nothing in time (booted afresh)", s, n)
	}
	if len(errs) > 0 {
		t.Errorf("%d of %d boots failed; first: %s", len(errs), n, errs[0])
	}
}

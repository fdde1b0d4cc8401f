package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// BenchmarkExecuteTrue measures POST /v1/execute of `true` end to end: HTTP,
// admission, a fresh sandbox, the job, the answer. It reports requests per
// second and the p50 and p99 latency at concurrency 1 and 16, with cold
// sandboxes (the default) and with a warm pool (--warm). Run it with a fixed
// count so each sub-benchmark sets up once:
//
//	go test ./internal/sandboxapi -run '^$' -bench ExecuteTrue -benchtime 100x
func BenchmarkExecuteTrue(b *testing.B) {
	for _, mode := range []struct {
		name string
		warm int
	}{{"cold", 0}, {"warm", 8}} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c%d", mode.name, conc), func(b *testing.B) { benchExecute(b, conc, mode.warm) })
		}
	}
}

func benchExecute(b *testing.B, conc, warm int) {
	h := newHarness(b, harnessOpts{
		maxConcurrent: 24, queue: 4096, queueTimeout: 10 * time.Minute,
		// As `aster sandbox serve` runs it: answers go back before teardown.
		pool: sandbox.PoolOptions{Warm: warm, BackgroundClose: true},
	})
	if warm > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := h.mgr.WaitWarm(ctx); err != nil {
			b.Fatalf("warm pool: %v", err)
		}
	}
	body, _ := json.Marshal(api.ExecuteRequest{Argv: []string{"true"}})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	post := func() error {
		resp, err := client.Post(h.base+api.RouteExecute, api.ContentTypeJSON, bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var res sandbox.WireResult
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 || res.Status != sandbox.StatusOK {
			return fmt.Errorf("%d %s %s", resp.StatusCode, res.Status, res.Error)
		}
		return nil
	}
	if err := post(); err != nil { // one untimed request: image info cached, connections open
		b.Fatal(err)
	}
	if warm > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		h.mgr.WaitWarm(ctx)
	}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := post(); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p int) float64 { return float64(lat[min(len(lat)-1, len(lat)*p/100)].Microseconds()) / 1000 }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(pct(50), "p50-ms")
	b.ReportMetric(pct(99), "p99-ms")
}

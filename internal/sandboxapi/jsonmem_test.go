package sandboxapi

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
)

// SECURITY L3: JSON bodies cost memory of their own, not of their size.
// Three concurrent 60 MB JSON bodies to /v1/execute, each a 45 MB file as
// base64, run to the end; the server's peak heap (sampled in this process,
// which holds the server, while the bodies are read and run) grows by less
// than 48 MiB over what it held before, the bodies the test holds itself
// included. Before the files were spooled as they arrived it grew by about
// four times the bodies (714 MB for these three).
func TestJSONBodyMemory(t *testing.T) {
	const n = 3
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.MaxBodyBytes = 64 << 20
		o.MaxBodyInFlightBytes = n * (64 << 20)
	}})
	raw := make([]byte, 45<<20)
	_, _ = rand.Read(raw)
	body, err := json.Marshal(api.ExecuteRequest{Argv: []string{"sh", "-c", "wc -c < big.bin"}, JobRequest: api.JobRequest{
		Files:  map[string]api.File{"big.bin": api.BinaryFile(raw)},
		Limits: api.Limits{WorkdirSize: "128m", Memory: "256m", Timeout: "2m"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	raw = nil
	client := &http.Client{Transport: &http.Transport{}}
	post := func() (int, []byte, error) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, h.base+api.RouteExecute, bytes.NewReader(body))
		req.Header.Set("Content-Type", api.ContentTypeJSON)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	// One run first, so that what every run allocates once is there.
	if code, b, err := post(); err != nil || code != http.StatusOK {
		t.Fatalf("first run: %d %s %v", code, b, err)
	}

	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, allocBase := ms.HeapInuse, ms.TotalAlloc
	stop := make(chan struct{})
	peakc := make(chan uint64, 1)
	go func() {
		peak := base
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				peakc <- peak
				return
			case <-tick.C:
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			code, b, err := post()
			var res api.Result
			switch {
			case err != nil:
				errs <- err
			case code != http.StatusOK:
				errs <- fmt.Errorf("status %d: %s", code, b)
			case json.Unmarshal(b, &res) != nil || res.Stdout != fmt.Sprintln(45<<20):
				errs <- fmt.Errorf("result %s", b)
			}
		})
	}
	wg.Wait()
	close(stop)
	peak := <-peakc
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	runtime.ReadMemStats(&ms)
	grew := int64(peak) - int64(base)
	t.Logf("%d bodies of %.1f MiB: peak heap grew %.1f MiB over %.1f MiB; %.1f MiB allocated in all",
		n, float64(len(body))/(1<<20), float64(grew)/(1<<20), float64(base)/(1<<20), float64(ms.TotalAlloc-allocBase)/(1<<20))
	if grew > 48<<20 {
		t.Errorf("the peak heap grew by %.1f MiB for %d bodies of %.1f MiB; want under 48 MiB whatever their size",
			float64(grew)/(1<<20), n, float64(len(body))/(1<<20))
	}
}

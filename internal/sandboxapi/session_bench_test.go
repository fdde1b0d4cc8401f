package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/docker"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// BenchmarkSessionLifecycle measures, through the HTTP API over one
// keep-alive connection and alternating in one run, what an agent's session
// costs against the one-shot run it replaces:
//
//   - oneshot: POST /v1/execute of `true` (a cold sandbox);
//   - create: POST /v1/sessions until its 201;
//   - exec: POST /v1/sessions/{id}/exec of `true` in that live session;
//   - delete: DELETE /v1/sessions/{id};
//   - fork: POST /v1/sessions with from_snapshot, a snapshot of a session
//     whose /work holds 8 MiB in 64 files (its size is reported too).
//
// Each is reported as p50 and p95 in milliseconds:
//
//	go test ./internal/sandboxapi -run '^$' -bench SessionLifecycle -benchtime 20x
func BenchmarkSessionLifecycle(b *testing.B) {
	b.Run("docker", func(b *testing.B) { benchSessions(b, harnessOpts{}) })
	// Each exec an engine exec of a further aster-init, as before the
	// holder served execs over its attach stream.
	b.Run("docker-engine-exec", func(b *testing.B) {
		benchSessions(b, harnessOpts{runtime: sandboxtest.DockerWith(b, docker.Options{SessionEngineExecs: true})})
	})
	b.Run("oci", func(b *testing.B) {
		benchSessions(b, harnessOpts{runtime: ocitest.Runtime(b)})
	})
	// Each exec a `crun exec` of a further aster-init, as before the holder
	// served execs over its own streams.
	b.Run("oci-runtime-exec", func(b *testing.B) {
		o := ocitest.Options(b)
		o.SessionRuntimeExecs = true
		benchSessions(b, harnessOpts{runtime: ocitest.New(b, o)})
	})
	b.Run("microvm", func(b *testing.B) {
		benchSessions(b, harnessOpts{runtime: microvmtest.Runtime(b)})
	})
}

func benchSessions(b *testing.B, o harnessOpts) {
	o.maxConcurrent = 8
	o.server = func(opts *Options) { opts.SnapshotDir = b.TempDir() + "/snaps"; opts.MaxSessions = 4 }
	h := newHarness(b, o)
	ctx := context.Background()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	call := func(method, path string, v any, want int) []byte {
		var body io.Reader
		if v != nil {
			raw, _ := json.Marshal(v)
			body = bytes.NewReader(raw)
		}
		req, _ := http.NewRequestWithContext(ctx, method, h.base+path, body)
		if v != nil {
			req.Header.Set("Content-Type", api.ContentTypeJSON)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != want {
			b.Fatalf("%s %s: %d %s %v", method, path, resp.StatusCode, out, err)
		}
		return out
	}
	create := func(req api.SessionRequest) string {
		var s api.Session
		if err := json.Unmarshal(call(http.MethodPost, api.RouteSessions, req, http.StatusCreated), &s); err != nil {
			b.Fatal(err)
		}
		return s.ID
	}
	execTrue := func(id string) {
		var res api.Result
		if err := json.Unmarshal(call(http.MethodPost, api.RouteSessions+"/"+id+"/exec", api.SessionExecRequest{Argv: []string{"true"}}, http.StatusOK), &res); err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("exec: %+v %v", res, err)
		}
	}

	// The snapshot every fork starts from.
	src := create(api.SessionRequest{})
	call(http.MethodPost, api.RouteSessions+"/"+src+"/exec", api.SessionExecRequest{Argv: []string{"sh", "-c",
		"mkdir -p data && for i in $(seq 64); do head -c 131072 /dev/urandom > data/f$i; done"}}, http.StatusOK)
	var snap api.SessionSnapshot
	if err := json.Unmarshal(call(http.MethodPost, api.RouteSessions+"/"+src+"/snapshot", nil, http.StatusCreated), &snap); err != nil {
		b.Fatal(err)
	}
	call(http.MethodDelete, api.RouteSessions+"/"+src, nil, http.StatusNoContent)

	// One untimed round: image information cached, the connection open.
	call(http.MethodPost, api.RouteExecute, api.ExecuteRequest{Argv: []string{"true"}}, http.StatusOK)
	lat := map[string][]time.Duration{}
	timed := func(name string, f func()) {
		t0 := time.Now()
		f()
		lat[name] = append(lat[name], time.Since(t0))
	}
	b.ResetTimer()
	for b.Loop() {
		timed("oneshot", func() {
			call(http.MethodPost, api.RouteExecute, api.ExecuteRequest{Argv: []string{"true"}}, http.StatusOK)
		})
		var id string
		timed("create", func() { id = create(api.SessionRequest{}) })
		timed("exec", func() { execTrue(id) })
		timed("delete", func() { call(http.MethodDelete, api.RouteSessions+"/"+id, nil, http.StatusNoContent) })
		timed("fork", func() { id = create(api.SessionRequest{FromSnapshot: snap.ID}) })
		execTrue(id) // the fork works
		call(http.MethodDelete, api.RouteSessions+"/"+id, nil, http.StatusNoContent)
	}
	b.StopTimer()
	for _, name := range []string{"oneshot", "create", "exec", "delete", "fork"} {
		d := lat[name]
		slices.Sort(d)
		b.ReportMetric(ms(d[len(d)/2]), name+"-p50-ms")
		b.ReportMetric(ms(d[(len(d)*95)/100]), name+"-p95-ms")
	}
	b.ReportMetric(float64(snap.SizeBytes)/(1<<20), "snapshot-MiB")
	b.Logf("%s", fmt.Sprintf("exec/oneshot p50 ratio %.2f, create/oneshot %.2f, fork/oneshot %.2f",
		ratio(lat, "exec"), ratio(lat, "create"), ratio(lat, "fork")))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ratio(lat map[string][]time.Duration, name string) float64 {
	a, o := lat[name], lat["oneshot"]
	return float64(a[len(a)/2]) / float64(o[len(o)/2])
}

package kubernetes_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/kubernetes/kubetest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandboxapi"
)

// TestAPIServerRestart is SECURITY.md G5 on Kubernetes: the API server is
// stopped while a run streams through `aster sandbox serve`'s API. The run ends
// with "unavailable", new runs and /readyz answer 503 with Retry-After while it
// is away, runs succeed again once it is back (no restart of the service), and
// no sandbox Pod is left behind. It stops the test cluster's kube-apiserver, so
// it runs only with ASTER_TEST_K8S_RESTART=1 (scripts/k8s/ci.sh sets it).
func TestAPIServerRestart(t *testing.T) {
	if os.Getenv("ASTER_TEST_K8S_RESTART") != "1" {
		t.Skip("stops the test cluster's API server: set ASTER_TEST_K8S_RESTART=1")
	}
	opts := kubetest.Options(t)
	rt := kubetest.New(t, opts)
	pidFile := "/run/aster-k8s/pids/kube-apiserver.pid"
	if _, err := os.Stat(pidFile); err != nil {
		kubetest.Skip(t, "not the scripts/k8s cluster (%v): cannot restart its API server", err)
	}
	metrics := sandboxapi.NewMetrics()
	mgr, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime: rt, Images: []string{sandboxtest.Image()}, Defaults: sandbox.DefaultLimits(), Bounds: sandbox.LimitBounds(),
		MaxConcurrent: 2, QueueSize: 8, QueueTimeout: time.Minute, Observer: metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sandboxapi.New(sandboxapi.Options{Manager: mgr, Metrics: metrics, MaxBodyBytes: 1 << 20, ShutdownGrace: time.Second, EngineCheckPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	post := func(accept string, argv ...string) (*http.Response, error) {
		b, _ := json.Marshal(api.ExecuteRequest{Argv: argv})
		req, _ := http.NewRequest(http.MethodPost, hs.URL+api.RouteExecute, bytes.NewReader(b))
		req.Header.Set("Content-Type", api.ContentTypeJSON)
		req.Header.Set("Accept", accept)
		return http.DefaultClient.Do(req)
	}
	if resp, err := post(api.ContentTypeJSON, "true"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("warm-up run: %v %v", resp, err)
	}

	// A streamed run is in flight when the API server goes away.
	resp, err := post(api.ContentTypeNDJSON, "sh", "-c", "echo started; sleep 120")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.Contains(sc.Text(), "started") {
		t.Fatalf("first event %q", sc.Text())
	}
	stopAPIServer(t, pidFile)
	restarted := false
	defer func() {
		if !restarted {
			startAPIServer(t)
		}
	}()
	sandboxtest.CheckCutOffStream(t, sc, "the API server")

	// Meanwhile: 503 with Retry-After for runs and readiness.
	r2, err := post(api.ContentTypeJSON, "true")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.StatusCode != 503 || r2.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"unavailable"`) {
		t.Errorf("run while the API server is away: %d %q %s", r2.StatusCode, r2.Header.Get("Retry-After"), body)
	}
	if r3, err := http.Get(hs.URL + api.RouteReady); err != nil || r3.StatusCode != 503 {
		t.Errorf("readyz while the API server is away: %v %v", r3, err)
	}

	startAPIServer(t)
	restarted = true
	t0 := time.Now()
	waitFor(t, 90*time.Second, "a run to succeed again", func() bool {
		resp, err := post(api.ContentTypeJSON, "echo", "back")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.Contains(string(b), `"stdout":"back\n"`)
	})
	t.Logf("recovered %s after the API server came back", time.Since(t0).Round(time.Millisecond))
	if r3, err := http.Get(hs.URL + api.RouteReady); err != nil || r3.StatusCode != 200 {
		t.Errorf("readyz after recovery: %v %v", r3, err)
	}
	// The Pod of the interrupted run is deleted once the API server is back.
	waitFor(t, 60*time.Second, "no sandbox Pod left", func() bool { return len(podsIn(t, opts)) == 0 })
}

func stopAPIServer(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil { // a crash, the harsher case
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "kube-apiserver to exit", func() bool { return syscall.Kill(pid, 0) != nil })
}

// startAPIServer runs up.sh, which starts what is not running (the API server).
func startAPIServer(t *testing.T) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(sandboxtest.RepoRoot(t), "scripts", "k8s", "up.sh"))
	cmd.Env = append(os.Environ(), "ASTER_K8S_SKIP_SMOKE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restart the API server with up.sh: %v\n%s", err, out)
	}
}

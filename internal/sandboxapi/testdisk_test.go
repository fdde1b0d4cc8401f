package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/workspace"
	"github.com/asterhq/aster/internal/workspace/workspacetest"
)

// SECURITY L (disk of /v1/test): a request's snapshot and the dependency
// archive its install leaves are one share of --max-spool. With 48 MiB of
// spool, a 20 MB snapshot whose install leaves 32 MB of dependencies can
// never fit (413, naming --max-spool), although each alone would and the
// test phase's /work (64 MiB) holds both; the same install on a small
// snapshot is served. Before, the dependency archive was outside the spool.
func TestTestSnapshotAndDependenciesShareSpool(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	h := newHarness(t, harnessOpts{maxConcurrent: 2, server: func(o *Options) {
		o.MaxBodyBytes, o.MaxSpoolBytes, o.Ceilings.WorkdirBytes = 64<<20, 48<<20, 64<<20
		o.TempDir = tmp
		o.Egress = &egress.Policy{Allow: []egress.Rule{{Host: "registry.invalid", Port: 443}}}
	}})
	const depsBytes = 32_000_000
	post := func(snapshotBytes int) (*http.Response, []byte) {
		spec, err := json.Marshal(api.TestRequest{
			Setup:      []string{"sh", "-c", fmt.Sprintf("mkdir -p node_modules && head -c %d /dev/zero > node_modules/blob", depsBytes)},
			Command:    []string{"sh", "-c", fmt.Sprintf("test $(wc -c < node_modules/blob) -eq %d && test $(wc -c < data) -eq %d", depsBytes, snapshotBytes)},
			JobRequest: api.JobRequest{Limits: api.Limits{Timeout: "2m", WorkdirSize: "24m"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		snap := workspacetest.Tar(t, map[string]string{"data": strings.Repeat("s", snapshotBytes)}, workspace.Caps{MaxBytes: 24 << 20})
		return h.do(context.Background(), http.MethodPost, api.RouteTest, api.ContentTypeTar, bytes.NewReader(snap), api.HeaderSpec, string(spec))
	}
	resp, body := post(20_000_000)
	e := errorOf(t, resp, body, http.StatusRequestEntityTooLarge, api.CodeTooLarge)
	if !strings.Contains(e.Message, "--max-spool") || !strings.Contains(e.Message, "host disk") {
		t.Errorf("the refusal does not say which disk: %q", e.Message)
	}
	if h.srv.spool.InUse() != 0 {
		t.Errorf("%d bytes of spool still held after the answer", h.srv.spool.InUse())
	}
	resp, body = post(1_000_000)
	tr := decodeOK[api.TestResponse](t, resp, body)
	if tr.Status != "ok" || tr.Install == nil || tr.Install.Status != api.InstallOK {
		t.Fatalf("the small snapshot: status %s install %+v stderr %q", tr.Status, tr.Install, tr.Stderr)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the server's temporary directory: %v", left)
	}
}

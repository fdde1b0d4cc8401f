package client

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/runstore"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/testkit"
)

// The client submits an asynchronous run, waits for it, lists it, verifies
// the signed callback, and lists the server's images.
func TestAsyncRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the container engine (skipped with -short)")
	}
	secret := []byte("client-test-callback-secret")
	type delivery struct {
		body []byte
		sig  string
	}
	got := make(chan delivery, 2)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{b, r.Header.Get(api.HeaderSignature)}
	}))
	defer cb.Close()
	cbURL, _ := url.Parse(cb.URL)

	rt := sandboxtest.Docker(t)
	mgr, err := sandbox.NewManager(sandbox.ManagerOptions{Runtime: rt, Images: []string{sandboxtest.Image()}, Defaults: config.DefaultLimits(),
		Bounds: config.LimitBounds(), MaxConcurrent: 2, QueueSize: 4, QueueTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	store, err := runstore.Open(t.Context(), runstore.Options{Path: filepath.Join(t.TempDir(), "runs.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv, err := sandboxapi.New(sandboxapi.Options{Manager: mgr, Runs: store, Callbacks: sandboxapi.Callbacks{Allow: []string{cbURL.Host}, Secret: secret}})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, testkit.Serve(t, srv.Serve).URL, "")
	ctx := t.Context()

	run, err := c.SubmitExecute(ctx, ExecuteOptions{Argv: []string{"sh", "-c", "cat in.txt"}, Job: Job{Files: map[string][]byte{"in.txt": []byte("later\n")}}},
		SubmitOptions{CallbackURL: cb.URL + "/done"})
	if err != nil || run.State != api.RunQueued {
		t.Fatalf("submit %+v %v", run, err)
	}
	done, err := c.WaitRun(ctx, run.ID, 100*time.Millisecond)
	if err != nil || done.State != api.RunDone {
		t.Fatalf("wait %+v %v", done, err)
	}
	runs, err := c.Runs(ctx, 10)
	if err != nil || len(runs) != 1 || runs[0].ID != run.ID {
		t.Fatalf("runs %+v %v", runs, err)
	}
	select {
	case d := <-got:
		if !VerifySignature(secret, d.body, d.sig) {
			t.Errorf("signature %q does not verify", d.sig)
		}
		if VerifySignature([]byte("another secret"), d.body, d.sig) || VerifySignature(secret, append(d.body, ' '), d.sig) {
			t.Error("a wrong secret or a changed body verifies")
		}
	case <-time.After(time.Minute):
		t.Fatal("no callback")
	}
	if _, err := c.Run(ctx, "r-000000000000"); err == nil {
		t.Error("an unknown run was found")
	}
	images, err := c.Images(ctx)
	if err != nil || len(images) != 1 || images[0].Name != sandboxtest.Image() || images[0].Toolchains["python"] == "" {
		t.Fatalf("images %+v %v", images, err)
	}
}

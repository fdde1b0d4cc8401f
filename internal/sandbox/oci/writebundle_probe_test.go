package oci_test

import (
	"os"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

func TestWriteBundleProbe(t *testing.T) {
	dir := os.Getenv("ASTER_OCI_BUNDLE_OUT")
	if dir == "" {
		t.Skip()
	}
	rt := ocitest.Runtime(t)
	os.MkdirAll(dir, 0o700)
	if err := rt.WriteBundle(t.Context(), sandbox.PrepareOptions{RunID: "bare", Image: sandboxtest.Image(), Limits: config.DefaultLimits(), Deadline: time.Now().Add(time.Minute)}, dir, []string{"/bin/true"}); err != nil {
		t.Fatal(err)
	}
}

// Package ocitest helps tests that need the direct OCI runtime: it builds
// aster-init, points the runtime at a per-test state directory and a cache of
// exported images shared by every test run, and decides whether a host that
// cannot run it skips the test or fails it (ASTER_REQUIRE_OCI=1).
package ocitest

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/sandbox/oci"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// CacheDir is where tests keep exported images (ASTER_OCI_CACHE_DIR
// overrides): exporting the test image takes seconds, so it is done once.
func CacheDir() string {
	return cmp.Or(os.Getenv("ASTER_OCI_CACHE_DIR"), filepath.Join(os.TempDir(), "aster-oci-test-cache"))
}

// Binary is the OCI runtime binary tests use (ASTER_OCI_RUNTIME overrides).
func Binary() string {
	return cmp.Or(os.Getenv("ASTER_OCI_RUNTIME"), oci.DefaultRuntime)
}

// Required reports whether a host that cannot run the oci runtime must fail
// tests rather than skip them.
func Required() bool { return os.Getenv("ASTER_REQUIRE_OCI") == "1" }

// Options returns runtime options for a test: a fresh state directory, the
// shared cache, the Docker engine as the image source.
func Options(t testing.TB) oci.Options {
	t.Helper()
	src, err := oci.NewDockerSource("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	state, err := os.MkdirTemp(stateParent(), "aster-oci-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveState(state) })
	return oci.Options{
		Runtime:     Binary(),
		StateDir:    state,
		CacheDir:    CacheDir(),
		InitPath:    sandboxtest.InitBinary(t),
		Images:      src,
		Annotations: map[string]string{"aster.test": filepath.Base(t.Name())},
	}
}

// Runtime returns an oci runtime with the test image exported, or skips (fails
// when Required) where it cannot run: not root, no runtime binary, no image.
func Runtime(t testing.TB) *oci.Runtime {
	t.Helper()
	return New(t, Options(t))
}

// GVisorBinary is the runsc the gVisor tests use: ASTER_GVISOR_RUNSC (the
// variable `--runtime gvisor` reads), else runsc from PATH.
func GVisorBinary() string {
	return cmp.Or(os.Getenv("ASTER_GVISOR_RUNSC"), oci.DefaultGVisorRunsc)
}

// GVisorRequired reports whether a host without a working runsc must fail
// the gVisor tests rather than skip them (ASTER_REQUIRE_GVISOR=1, which
// `make test` sets).
func GVisorRequired() bool { return os.Getenv("ASTER_REQUIRE_GVISOR") == "1" }

// GVisorOptions are Options for the oci runtime on runsc, as `--runtime
// gvisor` builds it; ASTER_GVISOR_PLATFORM picks the platform.
func GVisorOptions(t testing.TB) oci.Options {
	t.Helper()
	opts := Options(t)
	opts.Runtime = GVisorBinary()
	opts.GVisor = true
	opts.GVisorPlatform = os.Getenv("ASTER_GVISOR_PLATFORM")
	return opts
}

// GVisor returns the oci runtime on runsc with the test image exported, or
// skips (fails when GVisorRequired) where it cannot run.
func GVisor(t testing.TB) *oci.Runtime {
	t.Helper()
	return NewGVisor(t, GVisorOptions(t))
}

// NewGVisor is GVisor with the caller's options.
func NewGVisor(t testing.TB, opts oci.Options) *oci.Runtime {
	t.Helper()
	return open(t, opts, GVisorRequired(), "ASTER_REQUIRE_GVISOR")
}

// New is Runtime with the caller's options.
func New(t testing.TB, opts oci.Options) *oci.Runtime {
	t.Helper()
	return open(t, opts, Required(), "ASTER_REQUIRE_OCI")
}

func open(t testing.TB, opts oci.Options, required bool, requireVar string) *oci.Runtime {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if required {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (set "+requireVar+"=1 to fail instead)", args...)
	}
	if os.Geteuid() != 0 {
		skip("the oci runtime needs root")
	}
	rt, err := oci.New(opts)
	if err != nil {
		skip("oci runtime: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := rt.Check(ctx); err != nil {
		skip("oci runtime: %v", err)
	}
	if err := rt.EnsureImage(ctx, sandboxtest.Image()); err != nil {
		skip("image %s: %v", sandboxtest.Image(), err)
	}
	return rt
}

// RemoveState removes a test's state directory. runsc --network=none keeps an
// empty network namespace bound at <root>/null-netns for its next sandboxes
// (several times over when the first sandboxes start together), and the
// mounts outlive them: they are detached first.
func RemoveState(dir string) {
	netns := filepath.Join(dir, "runsc", "null-netns")
	for range 64 {
		if unix.Unmount(netns, unix.MNT_DETACH) != nil {
			break
		}
	}
	os.RemoveAll(dir)
}

// stateParent is where per-test state directories go: ASTER_OCI_STATE_PARENT,
// else /dev/shm (a tmpfs, as /run is on most hosts), else the temp dir.
func stateParent() string {
	if v := os.Getenv("ASTER_OCI_STATE_PARENT"); v != "" {
		return v
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

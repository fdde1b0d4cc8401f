// Package microvmtest helps tests that need the microvm runtime: it builds
// aster-init, points the runtime at a per-test state directory and at caches
// shared by every test run (the guest, the exported image and its disk take
// seconds to make), and decides whether a host that cannot run it skips the
// test or fails it (ASTER_REQUIRE_MICROVM=1).
package microvmtest

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox/microvm"
	"github.com/asterhq/aster/internal/sandbox/oci"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// Required reports whether a host that cannot run the microvm runtime must
// fail tests rather than skip them.
func Required() bool { return os.Getenv("ASTER_REQUIRE_MICROVM") == "1" }

// CacheDir is where tests keep the guest, image trees and disks
// (ASTER_MICROVM_CACHE_DIR overrides).
func CacheDir() string {
	return cmp.Or(os.Getenv("ASTER_MICROVM_CACHE_DIR"), filepath.Join(os.TempDir(), "aster-microvm-test-cache"))
}

// Options returns runtime options for a test: a fresh state directory, the
// shared cache, the configured kernel directory, the Docker engine as the
// image source.
func Options(t testing.TB) microvm.Options {
	t.Helper()
	src, err := oci.NewDockerSource("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	state, err := os.MkdirTemp("", "aster-microvm-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	kernel := cmp.Or(os.Getenv("ASTER_MICROVM_KERNEL_DIR"), microvm.DefaultKernelDir)
	accel := cmp.Or(os.Getenv("ASTER_MICROVM_ACCEL"), microvm.DefaultAccel)
	return microvm.Options{
		QEMU:      microvm.DefaultQEMU,
		KernelDir: kernel,
		StateDir:  state,
		CacheDir:  CacheDir(),
		InitPath:  sandboxtest.InitBinary(t),
		Images:    src,
		Accel:     accel,
	}
}

// Runtime returns a microvm runtime with the test image's disk built, or
// skips (fails when Required) where it cannot run.
func Runtime(t testing.TB) *microvm.Runtime {
	t.Helper()
	return New(t, Options(t))
}

// New is Runtime with the caller's options.
func New(t testing.TB, opts microvm.Options) *microvm.Runtime {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if Required() {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (set ASTER_REQUIRE_MICROVM=1 to fail instead)", args...)
	}
	if os.Geteuid() != 0 {
		skip("the microvm runtime needs root")
	}
	rt, err := microvm.New(opts)
	if err != nil {
		skip("microvm runtime: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := rt.Check(ctx); err != nil {
		skip("microvm runtime: %v", err)
	}
	if err := rt.EnsureImage(ctx, sandboxtest.Image()); err != nil {
		skip("image %s: %v", sandboxtest.Image(), err)
	}
	return rt
}

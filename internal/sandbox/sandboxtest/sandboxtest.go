// Package sandboxtest helps tests that need a real sandbox runtime: it builds
// aster-init once per test binary, connects to the Docker engine, and decides
// whether a missing engine skips the test (a developer laptop) or fails it (CI,
// where ASTER_REQUIRE_DOCKER=1: a suite that silently skips proves nothing).
package sandboxtest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/docker"
)

// Image is the image integration tests run (ASTER_TEST_IMAGE overrides).
func Image() string {
	return cmp.Or(os.Getenv("ASTER_TEST_IMAGE"), sandbox.DefaultImage)
}

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	return repoRoot()
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// InitBinary builds cmd/aster-init (static) once per test process and returns
// its path. ASTER_INIT_PATH, when set, is used instead.
func InitBinary(t testing.TB) string {
	t.Helper()
	p, err := InitBinaryPath()
	if err != nil {
		t.Fatalf("build aster-init: %v", err)
	}
	return p
}

// InitBinaryPath is InitBinary for a caller with no test at hand (a helper
// that builds on it once per process): the path, or why it could not be built.
func InitBinaryPath() (string, error) {
	if p := os.Getenv("ASTER_INIT_PATH"); p != "" {
		return p, nil
	}
	return buildInit()
}

// buildInit builds cmd/aster-init once per test process.
var buildInit = sync.OnceValues(func() (string, error) {
	dir, err := binDir("aster-init-test-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "aster-init")
	return path, goBuild(path, "./cmd/aster-init", true)
})

// AsterBinary builds cmd/aster once per test process, with aster-init (from
// InitBinary) beside it where aster looks for it, and returns its path: the
// tests that run aster as a process (the CLI's, the App's crash tests).
func AsterBinary(t testing.TB) string {
	t.Helper()
	InitBinary(t) // its own failure, in its own words
	p, err := buildAster()
	if err != nil {
		t.Fatalf("build aster: %v", err)
	}
	return p
}

// buildAster builds cmd/aster once per test process and copies aster-init
// beside it.
var buildAster = sync.OnceValues(func() (string, error) {
	initBin, err := InitBinaryPath()
	if err != nil {
		return "", err
	}
	dir, err := binDir("aster-bin-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "aster")
	if err := goBuild(path, "./cmd/aster", false); err != nil {
		return "", err
	}
	data, err := os.ReadFile(initBin)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(filepath.Join(dir, "aster-init"), data, 0o755)
})

// binDir makes this process's directory for a built binary (processDir),
// readable by all: Docker bind-mounts aster-init from it, and the engine
// must be able to read it.
func binDir(prefix string) (string, error) {
	dir, err := processDir(prefix)
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

// goBuild builds the package pkg of this module into out; static: with
// -trimpath and without cgo, as aster-init must be to run in any image.
func goBuild(out, pkg string, static bool) error {
	args, env := []string{"build", "-o", out, pkg}, os.Environ()
	if static {
		args, env = []string{"build", "-trimpath", "-o", out, pkg}, append(env, "CGO_ENABLED=0")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = repoRoot(), env
	if b, err := cmd.CombinedOutput(); err != nil {
		return &buildError{out: string(b), err: err}
	}
	return nil
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// processTag tells this test process's containers from another's running the
// same test names at the same time (go test runs packages in parallel).
var processTag = fmt.Sprintf("%d", os.Getpid())

// Label is the value of the aster.test label that Docker(t) puts on every
// container it creates for t: the test's base name and this process's tag.
// Count a test's containers by it, never by the name alone.
func Label(t testing.TB) string {
	return filepath.Base(t.Name()) + "-" + processTag
}

// Required reports whether a missing engine must fail tests rather than skip.
func Required() bool { return os.Getenv("ASTER_REQUIRE_DOCKER") == "1" }

// Docker returns a Docker runtime on the local engine, with the test image
// present. Containers it creates carry the label aster.test=<t.Name()> so a
// test can count its own (see Label). Without an engine the test is skipped, or failed
// when Required.
func Docker(t testing.TB) *docker.Runtime {
	t.Helper()
	return DockerWith(t, docker.Options{})
}

// DockerWith is Docker with o's settings; the init binary and the test's
// label are filled in.
func DockerWith(t testing.TB, o docker.Options) *docker.Runtime {
	t.Helper()
	o.InitPath = InitBinary(t)
	o.Labels = map[string]string{"aster.test": Label(t)}
	rt, err := docker.New(o)
	if err != nil {
		t.Fatalf("docker runtime: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Check(ctx); err != nil {
		if Required() {
			t.Fatalf("ASTER_REQUIRE_DOCKER=1 but the engine is unreachable: %v", err)
		}
		t.Skipf("no Docker engine (set ASTER_REQUIRE_DOCKER=1 to fail instead): %v", err)
	}
	if _, err := rt.ImageInfo(ctx, Image()); err != nil {
		if Required() {
			t.Fatalf("image %s missing (run `make image`): %v", Image(), err)
		}
		t.Skipf("image %s missing (run `make image`): %v", Image(), err)
	}
	return rt
}

// Manager returns a Manager over rt with production defaults.
func Manager(t testing.TB, rt sandbox.Runtime, maxConcurrent int) *sandbox.Manager {
	t.Helper()
	m, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime:       rt,
		Images:        []string{Image()},
		Defaults:      sandbox.DefaultLimits(),
		Bounds:        sandbox.LimitBounds(),
		MaxConcurrent: maxConcurrent,
		QueueSize:     1024,
		QueueTimeout:  10 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

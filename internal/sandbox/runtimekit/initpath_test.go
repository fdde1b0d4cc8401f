package runtimekit_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox/docker"
	"github.com/asterhq/aster/internal/sandbox/microvm"
	"github.com/asterhq/aster/internal/sandbox/oci"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

func TestCheckInitBinary(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"init": 0o755, "plain": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)

	// A relative path comes back absolute.
	if got, err := runtimekit.CheckInitBinary("init"); err != nil || got != filepath.Join(dir, "init") {
		t.Errorf("executable: %q %v, want %q", got, err, filepath.Join(dir, "init"))
	}
	got, err := runtimekit.CheckInitBinary("missing")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "build it with `make build`, or pass --init-path") || got != "" {
		t.Errorf("missing: %q %v", got, err)
	}
	got, err = runtimekit.CheckInitBinary("plain")
	if want := "aster-init at " + filepath.Join(dir, "plain") + " is not executable"; err == nil || err.Error() != want || got != "" {
		t.Errorf("not executable: %q %v, want %s", got, err, want)
	}
}

// TestCgoInitIsRefusedWithItsCause is SECURITY.md K6. An aster-init built with
// cgo (what a plain `go build ./...` or `go install` makes wherever a C compiler
// is installed) cannot change the credentials of all its threads: every sandbox
// would fail with "identity: keep capabilities: operation not supported".
// CheckInitBinary, and so every runtime that puts the binary into its
// sandboxes, refuses it and says how to rebuild it; a CGO_ENABLED=0 build
// passes; and the binary run anyway names the cause itself.
func TestCgoInitIsRefusedWithItsCause(t *testing.T) {
	if testing.Short() {
		t.Skip("builds aster-init with cgo; skipped with -short")
	}
	cgoInit := filepath.Join(t.TempDir(), "aster-init")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", cgoInit, "./cmd/aster-init")
	cmd.Dir, cmd.Env = sandboxtest.RepoRoot(t), append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build with CGO_ENABLED=1 (needs a C compiler): %v\n%s", err, out)
	}
	want := "aster-init at " + cgoInit + " was built with cgo (CGO_ENABLED=1); rebuild it with CGO_ENABLED=0 go build -o " + cgoInit + " ./cmd/aster-init"

	if got, err := runtimekit.CheckInitBinary(cgoInit); err == nil || !strings.Contains(err.Error(), want) || got != "" {
		t.Errorf("CheckInitBinary: %q %v\nwant %q", got, err, want)
	}
	static, err := sandboxtest.InitBinaryPath()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := runtimekit.CheckInitBinary(static); err != nil || got != static {
		t.Errorf("the CGO_ENABLED=0 build: %q %v", got, err)
	}

	// Each runtime checks init before it looks at anything else it was given:
	// /bin/true stands in for the OCI runtime and QEMU, which are never run.
	runtimes := map[string]func() error{
		"docker": func() error { _, err := docker.New(docker.Options{InitPath: cgoInit}); return err },
		"oci": func() error {
			_, err := oci.New(oci.Options{Runtime: "true", StateDir: t.TempDir(), CacheDir: t.TempDir(), InitPath: cgoInit})
			return err
		},
		"microvm": func() error {
			_, err := microvm.New(microvm.Options{QEMU: "true", KernelDir: t.TempDir(), StateDir: t.TempDir(), CacheDir: t.TempDir(), InitPath: cgoInit})
			return err
		},
	}
	for name, open := range runtimes {
		if err := open(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s runtime: %v\nwant %q", name, err, want)
		}
	}

	// Run anyway as root, as docker starts it: init fails before it reads
	// anything, and says why.
	if os.Geteuid() != 0 {
		t.Log("not root: the cgo init's own message is not tried")
		return
	}
	run := exec.CommandContext(t.Context(), cgoInit, "-ids", "1900000000:1900000001")
	run.Stdin = strings.NewReader("")
	out, err := run.CombinedOutput()
	wantInit := "identity: keep capabilities: operation not supported: this aster-init was built with cgo (CGO_ENABLED=1)"
	if err == nil || !strings.Contains(string(out), wantInit) || !strings.Contains(string(out), "rebuild it with CGO_ENABLED=0 go build") {
		t.Errorf("the cgo init run as root: %v\n%s\nwant %q", err, out, wantInit)
	}
}

package sandbox_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
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
	if got, err := sandbox.CheckInitBinary("init"); err != nil || got != filepath.Join(dir, "init") {
		t.Errorf("executable: %q %v, want %q", got, err, filepath.Join(dir, "init"))
	}
	got, err := sandbox.CheckInitBinary("missing")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "build it with `make build`, or pass --init-path") || got != "" {
		t.Errorf("missing: %q %v", got, err)
	}
	got, err = sandbox.CheckInitBinary("plain")
	if want := "aster-init at " + filepath.Join(dir, "plain") + " is not executable"; err == nil || err.Error() != want || got != "" {
		t.Errorf("not executable: %q %v, want %s", got, err, want)
	}
}

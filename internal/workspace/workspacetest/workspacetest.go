// Package workspacetest builds workspace archives for the tests of the
// packages that take one (the gate's snapshots, the test phase).
package workspacetest

import (
	"bytes"
	"testing"

	"github.com/asterhq/aster/internal/workspace"
)

// Tar packs files (path → content) with workspace.PackFiles under caps and
// returns the archive.
func Tar(t testing.TB, files map[string]string, caps workspace.Caps) []byte {
	t.Helper()
	m := make(map[string][]byte, len(files))
	for name, text := range files {
		m[name] = []byte(text)
	}
	var buf bytes.Buffer
	if _, err := workspace.PackFiles(m, &buf, caps); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Package workspacetest builds workspace archives for the tests of the
// packages that take one (the gate's snapshots, the test phase) and reads
// archives back for the tests of those that make one.
package workspacetest

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
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

// Entry is one member of an archive read back by Entries.
type Entry struct {
	tar.Header
	Data string // a regular file's content
}

// Entries reads every member of the (uncompressed) tar stream r, failing
// the test on a broken archive.
func Entries(t testing.TB, r io.Reader) []Entry {
	t.Helper()
	var out []Entry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read the archive: %v", err)
		}
		e := Entry{Header: *h}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("read %s from the archive: %v", h.Name, err)
			}
			e.Data = string(b)
		}
		out = append(out, e)
	}
}

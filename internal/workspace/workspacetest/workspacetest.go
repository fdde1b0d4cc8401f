// Package workspacetest builds workspace archives for the tests of the
// packages that take one (the gate's snapshots, the test phase) and reads
// archives back for the tests of those that make one.
package workspacetest

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
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
	out, err := Read(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Read reads every member of the (uncompressed) tar stream r; a broken
// archive is an error, for a caller off the test goroutine, which must not
// call t.Fatal.
func Read(r io.Reader) ([]Entry, error) {
	var out []Entry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("read the archive: %w", err)
		}
		e := Entry{Header: *h}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				return out, fmt.Errorf("read %s from the archive: %w", h.Name, err)
			}
			e.Data = string(b)
		}
		out = append(out, e)
	}
}

package testphase

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/asterhq/aster/internal/workspace"
)

// The export comes from a sandbox: whatever it holds, extractDeps keeps only
// what the workspace filter accepts under the dependency directories.
func FuzzExtractDeps(f *testing.F) {
	f.Add(exportTar(f), "")
	f.Add(exportTar(f), "web")
	f.Add(tarOf(f, entry{name: "node_modules/../../x", body: "x"}), "")
	f.Add(tarOf(f, entry{name: "node_modules", typ: tar.TypeSymlink, link: "/etc"}, entry{name: "node_modules/x", body: "y"}), "")
	f.Add(tarOf(f, entry{name: ".venv/bin/python", typ: tar.TypeSymlink, link: "/usr/bin/python3"}), "")
	f.Add([]byte("not a tar"), "")
	f.Fuzz(func(t *testing.T, export []byte, workdir string) {
		workdir = cleanWorkdir(workdir)
		var out bytes.Buffer
		if _, err := extractDeps(bytes.NewReader(export), &out, workdir, workspace.Caps{MaxBytes: 1 << 20, MaxFiles: 1000}); err != nil {
			return
		}
		var again bytes.Buffer
		if _, err := workspace.Filter(bytes.NewReader(out.Bytes()), &again, workspace.Caps{MaxBytes: 1 << 20, MaxFiles: 1000}); err != nil {
			t.Fatalf("the dependency archive does not pass the filter: %v", err)
		}
		tr := tar.NewReader(&out)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !underAny(h.Name, depPrefixes(workdir)) {
				t.Fatalf("%q is outside the dependency directories", h.Name)
			}
		}
	})
}

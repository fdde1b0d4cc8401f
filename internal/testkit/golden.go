package testkit

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Golden compares v, as indented JSON with a final newline, with the file
// at path; `go test -update` rewrites the file instead. regen says how the
// file is made when it is missing (a go generate line, "go test -update").
func Golden(t *testing.T, path string, v any, regen string) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run %s)", err, regen)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("golden mismatch (-want +got):\n%s", d)
	}
}

package gate

import (
	"bytes"
	"testing"

	"github.com/asterhq/aster/internal/workspace"
)

func TestGoDirective(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"module x\n\ngo 1.26\n", "1.26"},
		{"module x\ngo 1.27.1 // the newest\ntoolchain go1.27.1\n", "1.27.1"},
		{"module x\n\tgo   1.27rc1\n", "1.27rc1"},
		{"module x\n// go 1.99\n", ""},
		{"module x\ngo banana\ngo 1.2\n", ""},
		{"module x\ngo 1.22 extra\n", ""},
		{"", ""},
	} {
		if got := goDirective([]byte(c.in)); got != c.want {
			t.Errorf("goDirective(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func goSnapshot(t *testing.T, files map[string][]byte) *Snapshot {
	t.Helper()
	var buf bytes.Buffer
	caps := workspace.Caps{MaxBytes: 8 << 20, MaxFiles: 10}
	if _, err := workspace.PackFiles(files, &buf, caps); err != nil {
		t.Fatal(err)
	}
	s, err := SpoolSnapshot(&buf, t.TempDir(), caps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Remove() })
	return s
}

func TestNeedsGo(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string][]byte
		have  string
		want  string
	}{
		{"older", map[string][]byte{"go.mod": []byte("module x\ngo 1.22\n")}, "1.26.8", ""},
		{"same minor", map[string][]byte{"go.mod": []byte("module x\ngo 1.26\n")}, "1.26.8", ""},
		{"same patch", map[string][]byte{"go.mod": []byte("module x\ngo 1.26.8\n")}, "1.26.8", ""},
		{"newer patch", map[string][]byte{"go.mod": []byte("module x\ngo 1.26.9\n")}, "1.26.8", "1.26.9"},
		{"newer minor", map[string][]byte{"go.mod": []byte("module x\ngo 1.27\n")}, "1.26.8", "1.27"},
		{"go.work newer", map[string][]byte{"go.work": []byte("go 1.28\nuse ./a\n"), "go.mod": []byte("module x\ngo 1.22\n")}, "1.26.8", "1.28"},
		{"nested go.mod is not the root's", map[string][]byte{"sub/go.mod": []byte("module x\ngo 1.30\n")}, "1.26.8", ""},
		{"image says nothing", map[string][]byte{"go.mod": []byte("module x\ngo 1.30\n")}, "", ""},
		{"too large", map[string][]byte{"go.mod": append([]byte("go 1.30\n"), make([]byte, maxGoModBytes)...)}, "1.26.8", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			need, _ := needsGo(goSnapshot(t, c.files), c.have)
			if need != c.want {
				t.Errorf("needsGo = %q, want %q", need, c.want)
			}
		})
	}
}

func FuzzGoDirective(f *testing.F) {
	f.Add([]byte("module x\ngo 1.26\n"))
	f.Add([]byte("go 1.27rc1 // c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v := goDirective(data)
		if v != "" && !bytes.Contains(data, []byte(v)) {
			t.Fatalf("version %q is not in the input", v)
		}
	})
}

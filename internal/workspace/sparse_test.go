package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/testkit"
)

const (
	sparseSize = 1 << 30          // what each sparse bomb declares
	dataAt     = sparseSize - 512 // where its only 512 bytes of data sit
)

// countWriter counts what it is given and keeps none of it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// A sparse entry declaring 1 GiB in a few kilobytes is refused before anything
// is written (SECURITY.md L1), by Filter and by Unpack, in every encoding.
func TestSparseRefused(t *testing.T) {
	for name, bomb := range testkit.SparseBombs("bomb", sparseSize) {
		t.Run(name, func(t *testing.T) {
			checkSparseBomb(t, bomb)
		})
	}
}

func checkSparseBomb(t *testing.T, bomb []byte) {
	t.Helper()
	// The fixture is what it claims: archive/tar reads it as 1 GiB of file.
	h, err := tar.NewReader(bytes.NewReader(bomb)).Next()
	if err != nil || h.Size != sparseSize {
		t.Fatalf("fixture: archive/tar reads %+v, %v; want a %d-byte file", h, err, sparseSize)
	}
	var out countWriter
	_, err = Filter(bytes.NewReader(bomb), &out, Caps{MaxBytes: 4 << 30})
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "sparse files are not supported in a workspace; pack them as regular files") {
		t.Fatalf("Filter: %v, want the sparse refusal", err)
	}
	if out.n != 0 {
		t.Fatalf("Filter wrote %d bytes of a refused sparse archive", out.n)
	}
	dst := t.TempDir()
	root, err := os.OpenRoot(dst)
	must(t, err)
	defer root.Close()
	if _, err := Unpack(bytes.NewReader(bomb), root, Caps{MaxBytes: 4 << 30}); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Unpack: %v, want ErrUnsafe", err)
	}
	if ents, _ := os.ReadDir(dst); len(ents) != 0 {
		t.Fatalf("Unpack wrote %v", ents)
	}
}

// The same, on archives made by GNU tar itself from a 1 GiB sparse file.
func TestSparseRefusedFromGNUTar(t *testing.T) {
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar binary to make real sparse archives with")
	}
	if v, err := exec.CommandContext(t.Context(), tarBin, "--version").Output(); err != nil || !bytes.Contains(v, []byte("GNU tar")) {
		t.Skipf("tar is not GNU tar (%v)", err)
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "bomb"))
	must(t, err)
	must(t, f.Truncate(sparseSize))
	_, err = f.WriteAt(bytes.Repeat([]byte("x"), 512), dataAt)
	must(t, err)
	must(t, f.Close())
	for _, format := range [][]string{
		{"--format=gnu"},
		{"--format=posix", "--sparse-version=0.0"},
		{"--format=posix", "--sparse-version=0.1"},
		{"--format=posix", "--sparse-version=1.0"},
	} {
		t.Run(strings.Join(format, " "), func(t *testing.T) {
			args := append([]string{"--sparse", "-c", "-f", "-", "-C", dir}, format...)
			bomb, err := exec.CommandContext(t.Context(), tarBin, append(args, "bomb")...).Output()
			if err != nil {
				t.Fatalf("tar: %v", err)
			}
			if len(bomb) > 64<<10 {
				t.Fatalf("tar wrote %d bytes: not a sparse archive", len(bomb))
			}
			checkSparseBomb(t, bomb)
		})
	}
}

// endless is a data section that never ends, and counts what was read of it.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	clear(p)
	e.n += int64(len(p))
	return len(p), nil
}

// Every file is counted at its declared size against MaxBytes before a byte of
// its data is read or written, so what Filter writes (the spool) never holds
// more file data than the cap its caller gives.
func TestFilterCountsDeclaredSizeFirst(t *testing.T) {
	h := testkit.TarHeaderBlock("huge", tar.TypeReg, 1<<40)
	data := &endless{}
	var out countWriter
	_, err := Filter(io.MultiReader(bytes.NewReader(h), data), &out, Caps{MaxBytes: 1 << 20})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Filter: %v, want ErrTooLarge", err)
	}
	if data.n != 0 || out.n != 0 {
		t.Fatalf("read %d bytes of the data and wrote %d before refusing", data.n, out.n)
	}
	// Files that fit one by one but not together: the spool stops below the cap.
	body := strings.Repeat("x", 600<<10)
	three := mkTar(t, entry{typ: tar.TypeReg, name: "a", body: body}, entry{typ: tar.TypeReg, name: "b", body: body}, entry{typ: tar.TypeReg, name: "c", body: body})
	out = countWriter{}
	if _, err := Filter(three, &out, Caps{MaxBytes: 1 << 20}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Filter: %v, want ErrTooLarge", err)
	}
	if out.n < 600<<10 || out.n > 1<<20 {
		t.Fatalf("spool got %d bytes; want the first file only, under the 1 MiB cap", out.n)
	}
}

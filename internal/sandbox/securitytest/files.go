package securitytest

import (
	"archive/tar"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

type countingRuntime struct {
	sandbox.Runtime
	prepared atomic.Int64
}

func (c *countingRuntime) Prepare(ctx context.Context, o sandbox.PrepareOptions) (sandbox.Instance, error) {
	c.prepared.Add(1)
	return c.Runtime.Prepare(ctx, o)
}

// F1: archives with ../ paths, absolute paths, links out and device nodes are
// refused before anything starts, or confined inside the sandbox; nothing is
// ever written on the host.
func (s *suite) f1Archives(t *testing.T) {
	sentinel := filepath.Join(os.TempDir(), "aster-f1-sentinel-"+sandbox.NewRunID())
	t.Cleanup(func() { os.Remove(sentinel) })
	rel := strings.Repeat("../", 12) + strings.TrimPrefix(sentinel, "/")
	refused := map[string]*bytes.Buffer{
		"dotdot":       tarOf(t, &tar.Header{Typeflag: tar.TypeReg, Name: rel}),
		"absolute":     tarOf(t, &tar.Header{Typeflag: tar.TypeReg, Name: sentinel}),
		"hardlink_out": tarOf(t, &tar.Header{Typeflag: tar.TypeLink, Name: "h", Linkname: "../../etc/passwd"}),
		"hardlink_abs": tarOf(t, &tar.Header{Typeflag: tar.TypeLink, Name: "h", Linkname: "/etc/passwd"}),
		"chardev":      tarOf(t, &tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}),
		"blockdev":     tarOf(t, &tar.Header{Typeflag: tar.TypeBlock, Name: "sda", Devmajor: 8}),
		"fifo":         tarOf(t, &tar.Header{Typeflag: tar.TypeFifo, Name: "p"}),
		// L6: a symlink's name later used as a directory.
		"symlink_then_dir": tarOf(t,
			&tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "../../etc"},
			&tar.Header{Typeflag: tar.TypeDir, Name: "l/"},
			&tar.Header{Typeflag: tar.TypeReg, Name: "l/passwd"}),
		// L1: a sparse entry declaring 1 GiB in a few bytes of archive.
		"sparse": sparseTar(t),
	}
	// A Manager of its own over a runtime that counts sandboxes prepared: a
	// refused archive must start nothing.
	counting := &countingRuntime{Runtime: s.tgt.Runtime}
	mgr, err := sandbox.NewManager(sandbox.ManagerOptions{Runtime: counting, Images: []string{s.tgt.Image}, Defaults: sandbox.DefaultLimits(), Bounds: sandbox.LimitBounds()})
	if err != nil {
		t.Fatal(err)
	}
	for name, archive := range refused {
		res, err := mgr.Run(t.Context(), sandbox.Spec{
			Image:     s.tgt.Image,
			Argv:      []string{"sh", "-c", "ls -la /work"},
			Workspace: sandbox.Workspace{Tar: archive},
		})
		if !errors.Is(err, sandbox.ErrInvalidSpec) || res.Status != sandbox.StatusError {
			t.Errorf("%s: want ErrInvalidSpec and status error, got %v / %s", name, err, short(res))
		}
		if !errors.Is(err, workspace.ErrUnsafe) {
			t.Errorf("%s: error should name the unsafe entry: %v", name, err)
		}
	}
	if n := counting.prepared.Load(); n != 0 {
		t.Fatalf("refused archives started %d sandboxes", n)
	}
	if _, err := os.Stat(sentinel); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an archive wrote %s on the host", sentinel)
	}

	// Links are kept, but only ever resolve inside the sandbox: a symlink to a
	// directory followed by an entry "through" it cannot write outside /work.
	res, err := s.mgr.Run(t.Context(), sandbox.Spec{
		Image: s.tgt.Image,
		Argv:  []string{"sh", "-c", "ls /tmp; cat /work/etc-link/passwd | head -1"},
		Workspace: sandbox.Workspace{Tar: tarOf(t,
			&tar.Header{Typeflag: tar.TypeSymlink, Name: "etc-link", Linkname: "/etc"},
			&tar.Header{Typeflag: tar.TypeSymlink, Name: "tmp-link", Linkname: "/tmp"},
			&tar.Header{Typeflag: tar.TypeReg, Name: "tmp-link/planted"},
		)},
	})
	if strings.Contains(string(res.Stdout.Data), "planted") {
		t.Fatalf("an entry was written through a symlink out of /work: %s", short(res))
	}
	if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(res.Error, "passes through the symlink") {
		t.Fatalf("an entry below a symlink should be refused: %v %s", err, short(res))
	}
}

// F2: a symlink in an uploaded directory that points at a host file is never
// followed by the host: the sandbox sees a dangling link, not the file.
func (s *suite) f2Symlink(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("HOST-ONLY-CONTENT"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(secret, filepath.Join(dir, "leak")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("fine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, _, err := workspace.PackDir(dir, &buf, workspace.Caps{}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("HOST-ONLY-CONTENT")) {
		t.Fatal("the host followed the symlink while packing")
	}
	res := s.run(t, sandbox.Spec{
		Argv:      []string{"sh", "-c", "cat ok.txt; readlink leak; cat leak 2>&1 || echo unreadable"},
		Workspace: sandbox.Workspace{Tar: &buf},
	})
	out := string(res.Stdout.Data)
	if strings.Contains(out, "HOST-ONLY-CONTENT") || !strings.Contains(out, "unreadable") || !strings.Contains(out, "fine") {
		t.Fatalf("symlink to a host file: %s", short(res))
	}
}

// F4: names with newlines, control characters, right-to-left marks and 4 KB
// paths are carried faithfully, and rendered escaped in messages.
func (s *suite) f4Names(t *testing.T) {
	deep := strings.Repeat(strings.Repeat("d", 200)+"/", 19) + "leaf.txt" // ~3.8 KB path
	files := map[string][]byte{
		"new\nline.txt":          []byte("1"),
		"ctrl\x01\x1b[31mred":    []byte("2"),
		"rtl\u202etxt.exe":       []byte("3"),
		"zero\u200bwidth":        []byte("4"),
		deep:                     []byte("5"),
		"emoji-🙂.md":             []byte("6"),
		strings.Repeat("n", 255): []byte("7"),
	}
	res := s.run(t, sandbox.Spec{
		Argv:      []string{"python3", "-c", "import os\nn=0\nfor r,d,f in os.walk('/work'):\n    n+=len(f)\nprint('count=%d' % n)"},
		Workspace: sandbox.Workspace{Files: files},
	})
	wantStatus(t, res, sandbox.StatusOK)
	if kv(res)["count"] != "7" {
		t.Fatalf("files did not all arrive: %s", short(res))
	}
	for name := range files {
		q := workspace.Quote(name)
		if strings.ContainsAny(q, "\n\x01\x1b\u202e\u200b") {
			t.Errorf("Quote(%q) = %q still holds control or bidi characters", name, q)
		}
	}
	// A component over 255 bytes is refused before anything starts.
	_, err := s.mgr.Run(t.Context(), sandbox.Spec{Image: s.tgt.Image, Argv: []string{"true"}, Workspace: sandbox.Workspace{Files: map[string][]byte{strings.Repeat("x", 300): nil}}})
	if !errors.Is(err, sandbox.ErrInvalidSpec) {
		t.Fatalf("over-long name: want ErrInvalidSpec, got %v", err)
	}
}

// sparseTar is a PAX archive made by GNU tar --sparse, with one entry that
// declares 1 GiB in 10 KiB (the same file as internal/sandboxapi's test data).
//
//go:embed testdata/sparse-1g-pax.tar
var sparse1G []byte

func sparseTar(*testing.T) *bytes.Buffer { return bytes.NewBuffer(sparse1G) }

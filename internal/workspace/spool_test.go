package workspace

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSpoolLeavesNothingOnDisk(t *testing.T) {
	dir := t.TempDir()
	in := mkTar(t, entry{typ: tar.TypeDir, name: "src/"}, entry{typ: tar.TypeReg, name: "src/b.go", body: "package b"},
		entry{typ: tar.TypeReg, name: "a.txt", body: "hello"}, entry{typ: tar.TypeSymlink, name: "l", link: "a.txt"})
	var seen int
	sp, err := Spool(in, SpoolOptions{Dir: dir, Hook: func(*os.File) { seen++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spool file visible in %s: %v", dir, left)
	}
	if seen == 0 {
		t.Error("the hook saw no write")
	}
	if sp.Stats != (Stats{Files: 4, Bytes: 14}) {
		t.Errorf("stats %+v", sp.Stats)
	}
	files, err := sp.Files()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a.txt", "src/b.go"}, files); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	names, err := sp.Names(2)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"src/", "src/b.go"}, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	// Two readers at once each see the whole archive.
	r1, r2 := sp.Reader(), sp.Reader()
	b1, _ := io.ReadAll(r1)
	b2, _ := io.ReadAll(r2)
	if int64(len(b1)) != sp.Size() || string(b1) != string(b2) {
		t.Errorf("readers gave %d and %d bytes of %d", len(b1), len(b2), sp.Size())
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	var none *Spooled
	if err := none.Close(); err != nil {
		t.Errorf("closing a nil Spooled: %v", err)
	}
}

func TestSpoolRefuses(t *testing.T) {
	cases := []struct {
		name string
		in   []entry
		want error
	}{
		{"escaping name", []entry{entry{typ: tar.TypeReg, name: "../x", body: "x"}}, ErrUnsafe},
		{"over the file cap", []entry{entry{typ: tar.TypeReg, name: "big", body: "0123456789"}}, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Spool(mkTar(t, c.in...), SpoolOptions{Dir: dir, Caps: Caps{MaxBytes: 5}})
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("spool file left behind: %v", left)
			}
		})
	}
}

func TestSpoolArchiveCap(t *testing.T) {
	// 100 bytes of files fit the file cap, but not in a 1 KiB archive once
	// headers and padding are counted.
	var es []entry
	for _, n := range []string{"a", "b", "c", "d"} {
		es = append(es, entry{typ: tar.TypeReg, name: n, body: "0123456789"})
	}
	var biggest int64
	_, err := Spool(mkTar(t, es...), SpoolOptions{Dir: t.TempDir(), MaxArchiveBytes: 1024, Hook: func(f *os.File) {
		if fi, err := f.Stat(); err == nil && fi.Size() > biggest {
			biggest = fi.Size()
		}
	}})
	if !errors.Is(err, ErrSpoolFull) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrSpoolFull (an ErrTooLarge)", err)
	}
	if biggest > 1024 {
		t.Errorf("the spool file grew to %d bytes, over its cap", biggest)
	}
	sp, err := Spool(mkTar(t, es[:1]...), SpoolOptions{Dir: t.TempDir(), MaxArchiveBytes: 4096})
	if err != nil {
		t.Fatalf("an archive under the cap: %v", err)
	}
	sp.Close()
}

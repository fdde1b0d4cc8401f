package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

var reference = flag.Bool("reference", false, "benchmarks also run main's quadratic Filter (mainFilter) for comparison; its deep case takes about a minute per op")

// genTar is an io.Reader that produces a tar archive of n data-less entries
// (directories, empty files, links), made by hdr(i) one header at a time, so
// that an archive of a million entries never exists whole in memory.
type genTar struct {
	n, next  int // entries to make, entries made so far
	hdr      func(i int) *tar.Header
	buf      bytes.Buffer
	tw       *tar.Writer
	closed   bool
	produced int64
}

func newGenTar(n int, hdr func(i int) *tar.Header) *genTar {
	g := &genTar{n: n, hdr: hdr}
	g.tw = tar.NewWriter(&g.buf)
	return g
}

func (g *genTar) Read(p []byte) (int, error) {
	for g.buf.Len() == 0 {
		switch {
		case g.next < g.n:
			if err := g.tw.WriteHeader(g.hdr(g.next)); err != nil {
				return 0, fmt.Errorf("generate entry %d: %w", g.next, err)
			}
			g.next++
		case !g.closed:
			g.closed = true
			if err := g.tw.Close(); err != nil {
				return 0, err
			}
		default:
			return 0, io.EOF
		}
	}
	n, _ := g.buf.Read(p)
	g.produced += int64(n)
	return n, nil
}

// deepDirs is the directory part of the deep archives' names: 2,000 levels,
// 4,000 bytes, as deep as MaxPathBytes allows with a file name below it.
var deepDirs = strings.Repeat("d/", 2000)

// deepEntry: a symlink at the root (so that every later name is checked
// against the symlink set), then empty files 2,000 directories deep.
func deepEntry(i int) *tar.Header {
	if i == 0 {
		return &tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "d", Mode: 0o777}
	}
	return &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("%sf%04d", deepDirs, i), Mode: 0o644}
}

// wideEntry: 100 directories, each with a symlink and 98 empty files.
func wideEntry(i int) *tar.Header {
	dir := fmt.Sprintf("src/pkg%03d", i/100)
	switch i % 100 {
	case 0:
		return &tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755}
	case 1:
		return &tar.Header{Typeflag: tar.TypeSymlink, Name: dir + "/link", Linkname: "../pkg000", Mode: 0o777}
	}
	return &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("%s/file%02d.go", dir, i%100), Mode: 0o644}
}

// millionEntry: a symlink, then 1,000 directories of 999 empty files each.
func millionEntry(i int) *tar.Header {
	if i == 0 {
		return &tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "d000", Mode: 0o777}
	}
	i--
	if i%1000 == 0 {
		return &tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("d%03d/", i/1000), Mode: 0o755}
	}
	return &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("d%03d/f%03d", i/1000, i%1000), Mode: 0o644}
}

// withLast makes the last entry of gen a file below the symlink called link.
func withLast(n int, gen func(int) *tar.Header, link string) func(int) *tar.Header {
	return func(i int) *tar.Header {
		if i == n-1 {
			return &tar.Header{Typeflag: tar.TypeReg, Name: link + "/passwd", Mode: 0o644}
		}
		return gen(i)
	}
}

func TestFilterScale(t *testing.T) {
	cases := []struct {
		name    string
		n       int
		gen     func(int) *tar.Header
		symlink string // the last entry goes through this symlink in the refused variant
	}{
		{"deep: 2,000 entries 2,000 directories deep", 2001, deepEntry, "l"},
		{"wide: 10,000 entries", 10_000, wideEntry, "src/pkg050/link"},
		{"a million empty entries", 1_000_000, millionEntry, "l"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			caps := Caps{MaxFiles: int64(c.n)}
			st, err := Filter(newGenTar(c.n, c.gen), io.Discard, caps)
			if err != nil || st.Files != int64(c.n) || st.Bytes != 0 {
				t.Fatalf("Filter: %+v, %v; want %d entries", st, err, c.n)
			}
			if c.n > 100_000 {
				return // the refused variant costs as much again and adds nothing
			}
			// The same archive with one entry through a symlink at the very end:
			// every entry before it was checked, and the last one is still caught.
			_, err = Filter(newGenTar(c.n, withLast(c.n, c.gen, c.symlink)), io.Discard, caps)
			if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "passes through the symlink") {
				t.Fatalf("entry through %s: %v, want ErrUnsafe", c.symlink, err)
			}
		})
	}
}

// Deep parents through a symlink declared deep in the tree are found too, and
// a name that merely starts with a symlink's name is not confused with it.
func TestFilterDeepSymlinkParent(t *testing.T) {
	deep := strings.TrimSuffix(deepDirs[:3000], "/")
	ok := mkTar(t,
		entry{typ: tar.TypeSymlink, name: deep + "/l", link: "/"},
		entry{typ: tar.TypeReg, name: deep + "/lx/f", body: "x"},
		entry{typ: tar.TypeReg, name: deep + "/l.d/f", body: "x"},
	)
	if _, err := Filter(ok, io.Discard, Caps{}); err != nil {
		t.Fatalf("siblings of a deep symlink: %v", err)
	}
	bad := mkTar(t,
		entry{typ: tar.TypeSymlink, name: deep + "/l", link: "/"},
		entry{typ: tar.TypeReg, name: deep + "/l/" + deep[:500] + "/f", body: "x"},
	)
	if _, err := Filter(bad, io.Discard, Caps{}); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("below a deep symlink: %v", err)
	}
}

// The entry cap is enforced before any work on the entry: a million-entry
// archive under a cap of 1,000 is refused after reading 1,001 entries, and an
// entry over the cap is not even validated (its error is the cap's).
func TestFilterEntryCapFirst(t *testing.T) {
	g := newGenTar(1_000_000, millionEntry)
	st, err := Filter(g, io.Discard, Caps{MaxFiles: 1000})
	if !errors.Is(err, ErrTooLarge) || st.Files != 1001 {
		t.Fatalf("Filter: %+v, %v; want ErrTooLarge at entry 1,001", st, err)
	}
	if g.next > 1002 {
		t.Fatalf("Filter read %d entries of an archive over a cap of 1,000", g.next)
	}
	over := mkTar(t, entry{typ: tar.TypeReg, name: "a", body: "x"}, entry{typ: tar.TypeReg, name: "../evil", body: "x"})
	if _, err := Filter(over, io.Discard, Caps{MaxFiles: 1}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("entry over the cap: %v, want ErrTooLarge before its name is checked", err)
	}
	// The root entry ("./", as tar -C dir . writes it) and git's global header
	// are not entries of the workspace and do not count.
	root := mkTar(t, entry{typ: tar.TypeXGlobalHeader, name: "pax_global_header"}, entry{typ: tar.TypeDir, name: "./"}, entry{typ: tar.TypeReg, name: "./a", body: "x"})
	if st, err := Filter(root, io.Discard, Caps{MaxFiles: 1}); err != nil || st.Files != 1 {
		t.Fatalf("root entry counted: %+v, %v", st, err)
	}
}

// BenchmarkFilterDeep: 2,000 files 2,000 directories deep (11 MB).
func BenchmarkFilterDeep(b *testing.B) { benchFilter(b, 2001, deepEntry, true) }

// BenchmarkFilterWide: 10,000 entries in 100 directories, with 100 symlinks.
func BenchmarkFilterWide(b *testing.B) { benchFilter(b, 10_000, wideEntry, true) }

// BenchmarkFilterMillion: a million empty entries, generated as they are read
// (the generate sub-benchmark measures the generator alone).
func BenchmarkFilterMillion(b *testing.B) { benchFilter(b, 1_000_001, millionEntry, false) }

func benchFilter(b *testing.B, n int, gen func(int) *tar.Header, inMemory bool) {
	var archive []byte
	if inMemory {
		var err error
		if archive, err = io.ReadAll(newGenTar(n, gen)); err != nil {
			b.Fatal(err)
		}
	}
	source := func() (io.Reader, func() int64) {
		if inMemory {
			return bytes.NewReader(archive), func() int64 { return int64(len(archive)) }
		}
		g := newGenTar(n, gen)
		return g, func() int64 { return g.produced }
	}
	caps := Caps{MaxFiles: int64(n)}
	impls := []struct {
		name string
		run  func(io.Reader) error
	}{
		{"now", func(r io.Reader) error { _, err := Filter(r, io.Discard, caps); return err }},
	}
	if *reference {
		impls = append(impls, struct {
			name string
			run  func(io.Reader) error
		}{"main", func(r io.Reader) error { _, err := mainFilter(r, io.Discard, caps); return err }})
	}
	if !inMemory {
		impls = append(impls, struct {
			name string
			run  func(io.Reader) error
		}{"generate", func(r io.Reader) error { _, err := io.Copy(io.Discard, r); return err }})
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, size := source()
				if err := impl.run(r); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(size())
			}
		})
	}
}

// BenchmarkUnpackDeep: the deep archive unpacked through os.Root, which walks
// each name one component at a time (a system call per level and per entry).
func BenchmarkUnpackDeep(b *testing.B) {
	archive, err := io.ReadAll(newGenTar(2001, deepEntry))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(archive)))
	parent := b.TempDir()
	for b.Loop() {
		dst, err := os.MkdirTemp(parent, "unpack")
		if err != nil {
			b.Fatal(err)
		}
		root, err := os.OpenRoot(dst)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Unpack(bytes.NewReader(archive), root, Caps{MaxFiles: 2001}); err != nil {
			b.Fatal(err)
		}
		root.Close()
	}
}

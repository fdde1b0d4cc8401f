package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/asterhq/aster/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

type entry struct {
	typ  byte
	name string
	link string
	body string
	mode int64
	dev  int64
}

func mkTar(t testing.TB, entries ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: e.mode, Devmajor: e.dev}
		if e.typ == tar.TypeXGlobalHeader {
			h = &tar.Header{Typeflag: e.typ, Name: e.name, PAXRecords: map[string]string{"comment": "made by a test"}}
		}
		if h.Mode == 0 && e.typ != tar.TypeXGlobalHeader {
			h.Mode = 0o644
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func names(t testing.TB, r io.Reader) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(h.Typeflag)+":"+h.Name+"->"+h.Linkname)
	}
}

func TestCleanName(t *testing.T) {
	good := map[string]string{"a": "a", "a/b/": "a/b", "./a//b": "a/b", "a/./b": "a/b", ".": ".", "é/ü": "é/ü"}
	for in, want := range good {
		got, err := CleanName(in)
		if err != nil || got != want {
			t.Errorf("CleanName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a/..", "..", "a\x00b", `C:\x`, strings.Repeat("a", 256), strings.Repeat("a/", 2100)} {
		if _, err := CleanName(bad); !errors.Is(err, ErrUnsafe) {
			t.Errorf("CleanName(%q): %v, want ErrUnsafe", bad, err)
		}
	}
}

func TestFilter(t *testing.T) {
	cases := []struct {
		name    string
		in      []entry
		want    []string
		wantErr error
	}{
		{"plain", []entry{{typ: tar.TypeDir, name: "d/"}, {typ: tar.TypeReg, name: "d/f", body: "x", mode: 0o4755}}, []string{"5:d/->", "0:d/f->"}, nil},
		{"symlink kept verbatim", []entry{{typ: tar.TypeSymlink, name: "l", link: "/etc/passwd"}}, []string{"2:l->/etc/passwd"}, nil},
		{"hardlink to earlier file", []entry{{typ: tar.TypeReg, name: "a", body: "x"}, {typ: tar.TypeLink, name: "b", link: "a"}}, []string{"0:a->", "1:b->a"}, nil},
		{"dotdot", []entry{{typ: tar.TypeReg, name: "../../evil", body: "x"}}, nil, ErrUnsafe},
		{"absolute", []entry{{typ: tar.TypeReg, name: "/tmp/evil", body: "x"}}, nil, ErrUnsafe},
		{"hardlink out", []entry{{typ: tar.TypeLink, name: "h", link: "../etc/passwd"}}, nil, ErrUnsafe},
		{"hardlink absolute", []entry{{typ: tar.TypeLink, name: "h", link: "/etc/shadow"}}, nil, ErrUnsafe},
		{"hardlink to missing", []entry{{typ: tar.TypeLink, name: "h", link: "nothere"}}, nil, ErrUnsafe},
		{"hardlink to dir", []entry{{typ: tar.TypeDir, name: "d/"}, {typ: tar.TypeLink, name: "h", link: "d"}}, nil, ErrUnsafe},
		{"char device", []entry{{typ: tar.TypeChar, name: "null", dev: 1}}, nil, ErrUnsafe},
		{"block device", []entry{{typ: tar.TypeBlock, name: "sda", dev: 8}}, nil, ErrUnsafe},
		{"fifo", []entry{{typ: tar.TypeFifo, name: "p"}}, nil, ErrUnsafe},
		{"through symlink", []entry{{typ: tar.TypeSymlink, name: "l", link: "/etc"}, {typ: tar.TypeReg, name: "l/cron", body: "x"}}, nil, ErrUnsafe},
		{"through nested symlink", []entry{{typ: tar.TypeDir, name: "a/"}, {typ: tar.TypeSymlink, name: "a/l", link: "../.."}, {typ: tar.TypeReg, name: "a/l/b/c", body: "x"}}, nil, ErrUnsafe},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Filter(mkTar(t, c.in...), &out, Caps{})
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, c.wantErr)
			}
			if err != nil {
				return
			}
			if d := cmp.Diff(c.want, names(t, &out)); d != "" {
				t.Fatalf("entries (-want +got):\n%s", d)
			}
		})
	}
}

func TestFilterStripsSpecialBits(t *testing.T) {
	var out bytes.Buffer
	if _, err := Filter(mkTar(t, entry{typ: tar.TypeReg, name: "s", body: "x", mode: 0o6755}), &out, Caps{}); err != nil {
		t.Fatal(err)
	}
	h, err := tar.NewReader(&out).Next()
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != 0o755 || h.Uid != 0 || h.Uname != "" {
		t.Fatalf("mode %o uid %d uname %q", h.Mode, h.Uid, h.Uname)
	}
}

func TestFilterCaps(t *testing.T) {
	many := make([]entry, 11)
	for i := range many {
		many[i] = entry{typ: tar.TypeReg, name: strings.Repeat("f", i+1), body: "x"}
	}
	if _, err := Filter(mkTar(t, many...), io.Discard, Caps{MaxFiles: 10}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("entries over cap: %v", err)
	}
	big := entry{typ: tar.TypeReg, name: "big", body: strings.Repeat("x", 1000)}
	if _, err := Filter(mkTar(t, big), io.Discard, Caps{MaxBytes: 999}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("bytes over cap: %v", err)
	}
	if st, err := Filter(mkTar(t, big), io.Discard, Caps{MaxBytes: 1000}); err != nil || st.Bytes != 1000 {
		t.Fatalf("at cap: %v %+v", err, st)
	}
	// A header that claims more than it carries is refused, not trusted.
	raw := mkTar(t, big).Bytes()
	if _, err := Filter(bytes.NewReader(raw[:700]), io.Discard, Caps{}); err == nil {
		t.Fatal("truncated archive accepted")
	}
}

func TestPackDirNeverFollowsLinks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("HOST SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "a.txt"), []byte("A"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(dir, "leak")))
	must(t, os.Symlink(filepath.Dir(secret), filepath.Join(dir, "leakdir")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	var buf bytes.Buffer
	st, skipped, err := PackDir(dir, &buf, Caps{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("HOST SECRET")) {
		t.Fatal("a symlink was followed")
	}
	got := names(t, bytes.NewReader(buf.Bytes()))
	sort.Strings(got)
	want := []string{"0:sub/a.txt->", "2:leak->" + secret, "2:leakdir->" + filepath.Dir(secret), "5:sub/->"}
	sort.Strings(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("entries (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"fifo"}, skipped); d != "" || st.Files != 4 {
		t.Fatalf("skipped %v files %d", skipped, st.Files)
	}
}

func TestPackFilesAndUnpackRoundTrip(t *testing.T) {
	files := map[string][]byte{"a.txt": []byte("A"), "d/e/run.sh": []byte("#!/bin/sh\necho hi\n"), "new\nline": []byte("n")}
	var buf bytes.Buffer
	if _, err := PackFiles(files, &buf, Caps{}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	root, err := os.OpenRoot(dst)
	must(t, err)
	defer root.Close()
	if _, err := Unpack(&buf, root, Caps{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%q: %q %v", name, got, err)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dst, "d/e/run.sh")); fi == nil || fi.Mode()&0o111 == 0 {
		t.Error("script not executable")
	}
	for _, bad := range []map[string][]byte{{"../x": nil}, {"/abs": nil}, {"a": nil, "./a": nil}, {".": nil}} {
		if _, err := PackFiles(bad, io.Discard, Caps{}); !errors.Is(err, ErrUnsafe) {
			t.Errorf("PackFiles(%v): %v", bad, err)
		}
	}
}

// With several bad or doubled names the error is the same on every call: the
// names are taken in sorted order, not the map's.
func TestPackFilesErrorsInOneOrder(t *testing.T) {
	for _, c := range []struct {
		files map[string][]byte
		want  string
	}{
		{map[string][]byte{"b": nil, "./b": nil, "b/": nil, "x/../b": nil}, `"./b" and "b" name the same file`},
		{map[string][]byte{"z/../../up": nil, "/abs": nil, "ok": nil}, `"/abs"`},
	} {
		got := testkit.Same(t, func() string {
			_, err := PackFiles(c.files, io.Discard, Caps{})
			return fmt.Sprint(err)
		})
		if !strings.Contains(got, c.want) {
			t.Errorf("PackFiles(%v): %s, want it to say %s", c.files, got, c.want)
		}
	}
}

// Unpack is the second line of defence: even an archive that bypassed Filter
// cannot write outside the root.
func TestUnpackConfinedToRoot(t *testing.T) {
	outside := t.TempDir()
	dst := t.TempDir()
	root, err := os.OpenRoot(dst)
	must(t, err)
	defer root.Close()
	archive := mkTar(t,
		entry{typ: tar.TypeSymlink, name: "out", link: outside},
		entry{typ: tar.TypeReg, name: "out/planted", body: "x"},
	)
	if _, err := Unpack(archive, root, Caps{}); err == nil {
		t.Fatal("write through a symlink out of the root succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("file planted outside the root")
	}
	for _, e := range []entry{{typ: tar.TypeReg, name: "../escape", body: "x"}, {typ: tar.TypeLink, name: "h", link: "../../etc/passwd"}} {
		if _, err := Unpack(mkTar(t, e), root, Caps{}); err == nil {
			t.Errorf("%s accepted", e.name)
		}
	}
}

func TestQuote(t *testing.T) {
	cases := map[string]string{
		"plain.txt":          `"plain.txt"`,
		"new\nline":          `"new\x0aline"`,
		"rtl\u202etxt":       `"rtl\u202etxt"`,
		"esc\x1b[31m":        `"esc\x1b[31m"`,
		"quote\"back\\slash": `"quote\"back\\slash"`,
		"bad\xffutf8":        `"bad\xffutf8"`,
		"émoji🙂":             `"émoji🙂"`,
	}
	for in, want := range cases {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if q := Quote(strings.Repeat("a", 5000)); len(q) > 220 {
		t.Errorf("long name not cut: %d bytes", len(q))
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzFilter: whatever the bytes, Filter either refuses them or emits an
// archive whose every name is clean, and which passes Filter again unchanged.
func FuzzFilter(f *testing.F) {
	f.Add(mkTar(f, entry{typ: tar.TypeReg, name: "a", body: "x"}).Bytes())
	f.Add(mkTar(f, entry{typ: tar.TypeSymlink, name: "l", link: "/"}, entry{typ: tar.TypeReg, name: "l/x", body: "y"}).Bytes())
	f.Add(mkTar(f, entry{typ: tar.TypeReg, name: "../a", body: "x"}).Bytes())
	f.Add(mkTar(f, entry{typ: tar.TypeReg, name: "a", body: "x"}, entry{typ: tar.TypeLink, name: "b", link: "a"}).Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		if _, err := Filter(bytes.NewReader(data), &out, Caps{MaxBytes: 1 << 20, MaxFiles: 1000}); err != nil {
			return
		}
		first := append([]byte(nil), out.Bytes()...)
		tr := tar.NewReader(bytes.NewReader(first))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Filter emitted a bad archive: %v", err)
			}
			if _, err := CleanName(h.Name); err != nil {
				t.Fatalf("Filter emitted name %q", h.Name)
			}
			switch h.Typeflag {
			case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
			default:
				t.Fatalf("Filter emitted type %q", h.Typeflag)
			}
		}
		var again bytes.Buffer
		if _, err := Filter(bytes.NewReader(first), &again, Caps{MaxBytes: 1 << 20, MaxFiles: 1000}); err != nil {
			t.Fatalf("filtered archive refused on a second pass: %v", err)
		}
	})
}

// FuzzUnpack: no archive writes outside the root.
func FuzzUnpack(f *testing.F) {
	f.Add(mkTar(f, entry{typ: tar.TypeSymlink, name: "l", link: ".."}, entry{typ: tar.TypeReg, name: "l/x", body: "y"}).Bytes())
	f.Add(mkTar(f, entry{typ: tar.TypeReg, name: "a/b/c", body: "x"}).Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "root")
		must(t, os.Mkdir(dst, 0o755))
		root, err := os.OpenRoot(dst)
		must(t, err)
		defer root.Close()
		_, _ = Unpack(bytes.NewReader(data), root, Caps{MaxBytes: 1 << 20, MaxFiles: 200})
		ents, err := os.ReadDir(parent)
		must(t, err)
		if len(ents) != 1 || ents[0].Name() != "root" {
			t.Fatalf("something was written beside the root: %v", ents)
		}
	})
}

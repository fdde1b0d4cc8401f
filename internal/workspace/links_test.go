package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// A name that was a symlink is never again a directory, a file, a hard link or
// a parent, however it is spelled; a hard link never names or passes through a
// symlink; and what merely looks similar is still accepted (SECURITY.md L6).
func TestFilterSymlinkReuse(t *testing.T) {
	sym := func(name, link string) entry { return entry{typ: tar.TypeSymlink, name: name, link: link} }
	dir := func(name string) entry { return entry{typ: tar.TypeDir, name: name} }
	file := func(name string) entry { return entry{typ: tar.TypeReg, name: name, body: "x"} }
	hard := func(name, link string) entry { return entry{typ: tar.TypeLink, name: name, link: link} }
	refused := []struct {
		name string
		in   []entry
		want string // part of the error
	}{
		{"issue 12: l -> ../../etc, l/, l/passwd", []entry{sym("l", "../../etc"), dir("l/"), file("l/passwd")}, `"l/" names the earlier symlink "l" as a directory`},
		{"dir after symlink", []entry{sym("l", "sub"), dir("l/")}, "as a directory"},
		{"dir after symlink, ./ spelling", []entry{sym("l", "/etc"), dir("./l/")}, "as a directory"},
		{"dir after symlink, name with a trailing slash", []entry{sym("l/", "/etc"), dir("l")}, "as a directory"},
		{"file after symlink", []entry{sym("l", "/etc/passwd"), file("l")}, "as a file"},
		{"file after symlink, a//b spelling", []entry{sym("a/l", "/etc/passwd"), file("a//l")}, "as a file"},
		{"hard link named like a symlink", []entry{file("f"), sym("l", "/etc/passwd"), hard("l", "f")}, "as a hard link"},
		{"file below a symlink", []entry{sym("l", "/etc"), file("l/passwd")}, `passes through the symlink "l"`},
		{"file below a symlink, // spelling", []entry{sym("l", "/etc"), file("l//passwd")}, "passes through the symlink"},
		{"file below a symlink, ./ spelling", []entry{sym("./l", "/etc"), file("./l/./passwd")}, "passes through the symlink"},
		{"dir below a symlink", []entry{sym("l", "/etc"), dir("l/cron.d/")}, "passes through the symlink"},
		{"symlink below a symlink", []entry{sym("l", "/etc"), sym("l/x", "y")}, "passes through the symlink"},
		{"hard link named below a symlink", []entry{file("f"), sym("l", "/etc"), hard("l/shadow", "f")}, "passes through the symlink"},
		{"hard link to a symlink", []entry{sym("l", "/etc/passwd"), hard("h", "l")}, "not an earlier file"},
		{"hard link through a symlink that replaced a parent", []entry{file("a/x"), sym("a", "/etc"), hard("h", "a/x")}, `passes through the symlink "a"`},
		{"a/b, then a -> /, then a/b/c", []entry{file("a/b"), sym("a", "/"), file("a/b/c")}, `passes through the symlink "a"`},
		{"symlink replacing a directory entry", []entry{dir("a/"), sym("a", "/")}, "replaces the earlier directory"},
		{"chain: a -> b, b -> /etc, a/x", []entry{sym("a", "b"), sym("b", "/etc"), file("a/x")}, `passes through the symlink "a"`},
		{"chain inside: sub/l -> ../up, up -> /etc, sub/l/x", []entry{dir("sub/"), sym("sub/l", "../up"), sym("up", "/etc"), file("sub/l/x")}, `passes through the symlink "sub/l"`},
		{"deep symlink, deeper entry", []entry{sym("a/b/c/l", "../../../.."), file("a/b/c/l/d/e")}, `passes through the symlink "a/b/c/l"`},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Filter(mkTar(t, c.in...), &out, Caps{})
			if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrUnsafe with %q", err, c.want)
			}
		})
	}
	accepted := []struct {
		name string
		in   []entry
		want []string
	}{
		{"symlink redeclared as a symlink", []entry{sym("l", "a"), sym("l", "b")}, []string{"2:l->a", "2:l->b"}},
		{"file replaced by a symlink", []entry{file("f"), sym("f", "g")}, []string{"0:f->", "2:f->g"}},
		{"hard link made before its file became a symlink", []entry{file("f"), hard("h", "f"), sym("f", "g")}, []string{"0:f->", "1:h->f", "2:f->g"}},
		{"sibling that starts with the symlink's name", []entry{sym("l", "/"), file("lx/y"), file("l.d/y"), file("l-")}, []string{"2:l->/", "0:lx/y->", "0:l.d/y->", "0:l-->"}},
		{"symlink to a directory that is used by its own name", []entry{dir("sub/"), sym("l", "sub"), file("sub/x")}, []string{"5:sub/->", "2:l->sub", "0:sub/x->"}},
	}
	for _, c := range accepted {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if _, err := Filter(mkTar(t, c.in...), &out, Caps{}); err != nil {
				t.Fatal(err)
			}
			if got := names(t, &out); strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("entries %q, want %q", got, c.want)
			}
		})
	}
}

// The second line holds for the same pattern: Unpack, given it unfiltered,
// writes nothing outside its root.
func TestUnpackSymlinkThenDirectory(t *testing.T) {
	parent := t.TempDir()
	etc := filepath.Join(parent, "etc")
	must(t, os.Mkdir(etc, 0o755))
	dst := filepath.Join(parent, "a", "b")
	must(t, os.MkdirAll(dst, 0o755))
	root, err := os.OpenRoot(dst)
	must(t, err)
	defer root.Close()
	archive := mkTar(t,
		entry{typ: tar.TypeSymlink, name: "l", link: "../../etc"},
		entry{typ: tar.TypeDir, name: "l/"},
		entry{typ: tar.TypeReg, name: "l/passwd", body: "planted"},
	)
	if _, err := Unpack(archive, root, Caps{}); err == nil {
		t.Fatal("Unpack wrote through the symlink")
	}
	if _, err := os.Stat(filepath.Join(etc, "passwd")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file planted outside the root: %v", err)
	}
}

// FuzzFilterSymlinkModel builds archives from a line-per-entry script
// ("s name target", "d name", "f name", "h name target"), so that the fuzzer
// reaches redeclared names, odd spellings, symlinks used as parents and hard
// links through symlinks far more often than from raw tar bytes. Filter's verdict
// must equal that of a naive model that walks every parent with path.Dir
// (the quadratic check Filter replaced), and an accepted archive never has an
// entry below a symlink.
func FuzzFilterSymlinkModel(f *testing.F) {
	for _, seed := range []string{
		"s l ../../etc\nd l/\nf l/passwd",
		"f a/b\ns a /\nf a/b/c",
		"f f\ns l /etc\nh l/shadow f",
		"f a/x\ns a /etc\nh h a/x",
		"d sub/\ns sub/l ../up\ns up /etc\nf sub/l/x",
		"s ./l /etc\nd l//\nf l/./x",
		"s l a\ns l b\nf lx/y\nf f\nh h f\ns f g",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script string) {
		var entries []entry
		for _, line := range strings.Split(script, "\n") {
			fields := strings.Split(line, " ")
			if len(entries) == 24 || len(fields) < 2 || len(fields[0]) != 1 {
				continue
			}
			e := entry{name: fields[1], body: "x"}
			if len(fields) > 2 {
				e.link = fields[2]
			}
			switch fields[0] {
			case "f":
				e.typ = tar.TypeReg
			case "d":
				e.typ = tar.TypeDir
			case "s":
				e.typ = tar.TypeSymlink
			case "h":
				e.typ = tar.TypeLink
			default:
				continue
			}
			entries = append(entries, e)
		}
		archive, ok := tryTar(entries)
		if !ok {
			return
		}
		var out bytes.Buffer
		_, err := Filter(bytes.NewReader(archive), &out, Caps{})
		if want := naiveAccepts(entries); (err == nil) != want {
			t.Fatalf("Filter: %v; the naive model accepts: %v\n%q", err, want, script)
		}
		if err != nil {
			return
		}
		symlinks := map[string]bool{}
		tr := tar.NewReader(&out)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(h.Name, "/")
			for d := path.Dir(name); d != "."; d = path.Dir(d) {
				if symlinks[d] {
					t.Fatalf("accepted %q below the symlink %q", h.Name, d)
				}
			}
			if symlinks[name] && h.Typeflag != tar.TypeSymlink {
				t.Fatalf("accepted %q over a symlink", h.Name)
			}
			symlinks[name] = symlinks[name] || h.Typeflag == tar.TypeSymlink
		}
	})
}

// tryTar is mkTar for generated entries: false when archive/tar cannot encode one.
func tryTar(entries []entry) ([]byte, bool) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: 0o644}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if tw.WriteHeader(h) != nil {
			return nil, false
		}
		if e.typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				return nil, false
			}
		}
	}
	return buf.Bytes(), tw.Close() == nil
}

// naiveAccepts states Filter's rules for names and links the slow, obvious way.
func naiveAccepts(entries []entry) bool {
	kind := map[string]byte{}
	underSymlink := func(name string) bool {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if kind[d] == tar.TypeSymlink {
				return true
			}
		}
		return false
	}
	for _, e := range entries {
		name, err := CleanName(e.name)
		if err != nil {
			return false
		}
		if name == "." {
			continue
		}
		if underSymlink(name) || kind[name] == tar.TypeSymlink && e.typ != tar.TypeSymlink || kind[name] == tar.TypeDir && e.typ == tar.TypeSymlink {
			return false
		}
		switch e.typ {
		case tar.TypeSymlink:
			if e.link == "" || len(e.link) > MaxPathBytes {
				return false
			}
		case tar.TypeLink:
			target, err := CleanName(e.link)
			if err != nil || underSymlink(target) || kind[target] != tar.TypeReg {
				return false
			}
		}
		kind[name] = e.typ
	}
	return true
}

// Unpack keeps the latest entry's directory open; replacing a symlink on the way
// to it must send later entries where the name leads now, as if resolved anew.
func TestUnpackDirCacheFollowsReplacedSymlink(t *testing.T) {
	for _, c := range []struct {
		name    string
		replace entry
		want    string // where a/b/f3 must land, "" for nowhere (an error)
	}{
		{"symlink replaced by a symlink", entry{typ: tar.TypeSymlink, name: "a", link: "d"}, "d/b/f3"},
		{"symlink replaced by a file", entry{typ: tar.TypeReg, name: "a", body: "x"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := t.TempDir()
			root, err := os.OpenRoot(dst)
			must(t, err)
			defer root.Close()
			archive := mkTar(t,
				entry{typ: tar.TypeDir, name: "c/b/"},
				entry{typ: tar.TypeDir, name: "d/b/"},
				entry{typ: tar.TypeSymlink, name: "a", link: "c"},
				entry{typ: tar.TypeReg, name: "a/b/f1", body: "1"},
				entry{typ: tar.TypeReg, name: "a/b/f2", body: "2"},
				c.replace,
				entry{typ: tar.TypeReg, name: "a/b/f3", body: "3"},
			)
			_, err = Unpack(archive, root, Caps{})
			if (err == nil) != (c.want != "") {
				t.Fatalf("Unpack: %v", err)
			}
			for _, f := range []string{"c/b/f1", "c/b/f2"} {
				if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
					t.Errorf("%s: %v", f, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dst, "c/b/f3")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("f3 went through the replaced symlink: %v", err)
			}
			if c.want != "" {
				if b, err := os.ReadFile(filepath.Join(dst, c.want)); err != nil || string(b) != "3" {
					t.Errorf("%s: %q %v", c.want, b, err)
				}
			}
		})
	}
}

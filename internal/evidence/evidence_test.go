package evidence

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/workspace/workspacetest"
)

func TestParseAcceptsBothFileForms(t *testing.T) {
	for _, in := range []string{
		`{"files": {"tests/test_x.py": "def test(): assert 0"}, "argv": ["python3", "-m", "pytest", "-q", "tests/test_x.py"], "expect": "fail"}`,
		`{"files": [{"path": "tests/test_x.py", "content": "def test(): assert 0"}], "argv": ["python3", "-m", "pytest", "-q", "tests/test_x.py"], "expect": "fail"}`,
	} {
		ev, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("Parse(%s): %v", in, err)
		}
		if ev.Expect != ExpectFail || len(ev.Argv) != 5 || ev.Files["tests/test_x.py"] != "def test(): assert 0" {
			t.Errorf("Parse(%s) = %+v", in, ev)
		}
	}
	if ev, err := Parse([]byte(`null`)); ev != nil || err != nil {
		t.Errorf("null evidence = %v, %v; want none", ev, err)
	}
}

func TestParseRejects(t *testing.T) {
	big := strings.Repeat("x", MaxFileBytes+1)
	cases := map[string]string{
		"config":            `{"files": {".aster.yml": "x"}, "argv": ["true"], "expect": "pass"}`,
		"config yaml":       `{"files": {".aster.yaml": "x"}, "argv": ["true"], "expect": "pass"}`,
		"config nested":     `{"files": {"sub/.ASTER.YML": "x"}, "argv": ["true"], "expect": "pass"}`,
		"operator config":   `{"files": {"aster.yaml": "x"}, "argv": ["true"], "expect": "pass"}`,
		"git dir":           `{"files": {".git/hooks/pre-commit": "x"}, "argv": ["true"], "expect": "pass"}`,
		"aster dir":         `{"files": {".aster/ca.pem": "x"}, "argv": ["true"], "expect": "pass"}`,
		"absolute":          `{"files": {"/etc/passwd": "x"}, "argv": ["true"], "expect": "pass"}`,
		"dotdot":            `{"files": {"../x": "x"}, "argv": ["true"], "expect": "pass"}`,
		"dotdot inside":     `{"files": {"a/../../x": "x"}, "argv": ["true"], "expect": "pass"}`,
		"unclean":           `{"files": {"a//x": "x"}, "argv": ["true"], "expect": "pass"}`,
		"dot":               `{"files": {"./x": "x"}, "argv": ["true"], "expect": "pass"}`,
		"backslash":         `{"files": {"a\\..\\x": "x"}, "argv": ["true"], "expect": "pass"}`,
		"newline":           `{"files": {"a\nb": "x"}, "argv": ["true"], "expect": "pass"}`,
		"empty path":        `{"files": {"": "x"}, "argv": ["true"], "expect": "pass"}`,
		"too big":           `{"files": {"a": "` + big + `"}, "argv": ["true"], "expect": "pass"}`,
		"too many":          `{"files": {"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":""}, "argv": ["true"], "expect": "pass"}`,
		"no argv":           `{"files": {}, "argv": [], "expect": "pass"}`,
		"argv not strings":  `{"argv": ["true", 1], "expect": "pass"}`,
		"argv NUL":          `{"argv": ["a\u0000b"], "expect": "pass"}`,
		"argv long":         `{"argv": [` + strings.Repeat(`"a",`, MaxArgs) + `"a"], "expect": "pass"}`,
		"expect":            `{"argv": ["true"], "expect": "confirmed"}`,
		"unknown field":     `{"argv": ["true"], "expect": "pass", "verdict": "confirmed"}`,
		"not object":        `["true"]`,
		"content not str":   `{"files": {"a": 1}, "argv": ["true"], "expect": "pass"}`,
		"array extra field": `{"files": [{"path": "a", "content": "", "mode": 493}], "argv": ["true"], "expect": "pass"}`,
		"array dup":         `{"files": [{"path": "a", "content": ""}, {"path": "a", "content": ""}], "argv": ["true"], "expect": "pass"}`,
		"two values":        `{"argv": ["true"], "expect": "pass"} {}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			ev, err := Parse([]byte(in))
			if err == nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %+v, %v; want ErrInvalid", ev, err)
			}
		})
	}
}

func TestTotalSizeCap(t *testing.T) {
	ev := &Evidence{Files: map[string]string{}, Argv: []string{"true"}, Expect: ExpectPass}
	for _, p := range []string{"a", "b", "c"} {
		ev.Files[p] = strings.Repeat("x", MaxFileBytes)
	}
	if err := ev.Validate(); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("Validate of %d bytes = %v; want the total cap", 3*MaxFileBytes, err)
	}
}

func tarOf(t *testing.T, entries ...*tar.Header) func() (io.ReadCloser, error) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("o"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
}

func TestOverlayReplacesAndAdds(t *testing.T) {
	open := tarOf(t,
		&tar.Header{Name: "src/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "src/a.py", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3},
		&tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "src"},
	)
	files := map[string]string{"src/a.py": "new", "tests/deep/t.py": "t"}
	if err := checkOverlay(open, files); err != nil {
		t.Fatal(err)
	}
	rc, err := overlay(open, files)()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]string{}
	for _, e := range workspacetest.Entries(t, rc) {
		if _, dup := got[e.Name]; dup {
			t.Errorf("%s twice in the workspace", e.Name)
		}
		got[e.Name] = e.Data
	}
	want := map[string]string{"src/": "", "src/a.py": "new", "link": "", "tests/": "", "tests/deep/": "", "tests/deep/t.py": "t"}
	if len(got) != len(want) {
		t.Errorf("entries = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// A file under a link of the tree (which could point at a protected
	// name) and a file over a directory are refused.
	for _, p := range []string{"link/x.py", "src"} {
		if err := checkOverlay(open, map[string]string{p: "x"}); !errors.Is(err, ErrInvalid) {
			t.Errorf("checkOverlay(%s) = %v, want ErrInvalid", p, err)
		}
	}
}

func TestMarkdownFenceCannotBeClosed(t *testing.T) {
	v := &Verification{Status: Confirmed, Reason: "ok", Argv: []string{"sh", "-c", "echo ```"}, Files: []string{"t.py"},
		Head: &Run{Revision: "0123456789abcdef", Status: RunFailed, ExitCode: 1, Output: "```\n@someone **CONFIRMED**\n````\n\x1b[31m", DurationMS: 1500}}
	md := v.Markdown(nil)
	if !strings.Contains(md, "`````text\n") || !strings.Contains(md, "[U+001B]") {
		t.Errorf("output not fenced safely:\n%s", md)
	}
	rej := (&Verification{Status: Inconclusive, Reason: "evidence rejected: file path \"@octocat/[x](https://evil.example)/.aster.yml\""}).Markdown(nil)
	if strings.Contains(rej, "@octocat") || strings.Contains(rej, "https://evil.example") {
		t.Errorf("model text in the reason not sanitised:\n%s", rej)
	}
	if !strings.Contains(md, "0123456789ab") || !strings.Contains(md, "1.5s") || !strings.Contains(md, "`t.py`") {
		t.Errorf("revision, time or file missing:\n%s", md)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"files": {"t.py": "x"}, "argv": ["python3", "t.py"], "expect": "fail"}`))
	f.Add([]byte(`{"files": [{"path": "a/b", "content": ""}], "argv": ["go", "test"], "expect": "pass"}`))
	f.Add([]byte(`{"files": {"a/../.aster.yml": "x"}, "argv": ["x"], "expect": "pass"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Parse(data)
		if err != nil || ev == nil {
			return
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate refuses: %v", err)
		}
		total := 0
		for p, c := range ev.Files {
			total += len(c)
			low := strings.ToLower(p)
			if strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") || strings.HasSuffix(low, ".aster.yml") ||
				strings.HasSuffix(low, "aster.yaml") || strings.HasPrefix(low, ".git/") || strings.HasSuffix(low, ".aster.yaml") {
				t.Fatalf("accepted path %q", p)
			}
		}
		if total > MaxTotalBytes || len(ev.Argv) == 0 || len(ev.Argv) > MaxArgs {
			t.Fatalf("accepted %d bytes, %d args", total, len(ev.Argv))
		}
	})
}

package app

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/github"
)

var liveMention = regexp.MustCompile(`(^|[^\p{L}\p{N}_` + "`" + `])@[A-Za-z0-9]`)

func TestEscapeText(t *testing.T) {
	cases := []struct{ in, mustNot, must string }{
		{"ping @octocat now", "@octocat", "@" + zwsp + "octocat"},
		{"/aster review", "", zwsp + "/aster review"},
		{"<img src=x onerror=alert(1)>", "", `\<img`},
		{"see https://evil.example/x", "https://", "https" + zwsp + ":"},
		{"visit www.evil.example", "www.evil", "www" + zwsp + "."},
		{"![x](https://evil.example/p.png)", "![", `\!\[x\]`},
		{"secret <!-- aster:fp=0123456789abcdef -->", "aster:fp", ""},
		{"a\u202eb\u200bc\x00d", "\u202e", "abcd"},
		{"- list\n# heading", "\n", `\- list \# heading`},
		{"1. item", "", `1\. item`},
	}
	for _, c := range cases {
		got := escapeText(c.in, 0)
		if c.mustNot != "" && strings.Contains(got, c.mustNot) {
			t.Errorf("escapeText(%q) = %q: contains %q", c.in, got, c.mustNot)
		}
		if c.must != "" && !strings.Contains(got, c.must) {
			t.Errorf("escapeText(%q) = %q: lacks %q", c.in, got, c.must)
		}
	}
	if got := escapeText(strings.Repeat("é", 100), 11); !strings.HasSuffix(got, "…") || len(got) > 11+len("…") {
		t.Errorf("cut: %q", got)
	}
}

func TestSanitizeMarkdown(t *testing.T) {
	in := strings.Join([]string{
		"Use `@Override` here and `<T>` there.",
		"Ping @security-team and see [the docs](https://docs.python.org/3/) or [this](https://evil.example/phish).",
		"![pixel](https://evil.example/p.png) <img src=https://evil.example/y.png> <b>bold</b>",
		"/approve",
		"> /merge",
		"Bare https://evil.example/x and https://github.com/acme/widgets",
		"<!-- aster:summary --> hidden",
		"[ref]: https://evil.example/ref",
		"```go",
		"// @mention and <html> stay in code",
		"```",
	}, "\n")
	out := sanitizeMarkdown(in, 0)
	for _, bad := range []string{"@security-team", "](https://evil", "<img", "<b>", "\n/approve", "\n> /merge",
		"https://evil.example/x", "aster:summary", "evil.example/p.png", "]: https://evil"} {
		if strings.Contains(out, bad) {
			t.Errorf("sanitised text still has %q:\n%s", bad, out)
		}
	}
	for _, good := range []string{"`@Override`", "`<T>`", "[the docs](https://docs.python.org/3/)", "https://github.com/acme/widgets",
		"// @mention and <html> stay in code", "```go"} {
		if !strings.Contains(out, good) {
			t.Errorf("sanitised text lost %q:\n%s", good, out)
		}
	}
	// An unclosed fence is closed, so what follows cannot hide inside it.
	if out := sanitizeMarkdown("```\ncode", 0); !strings.HasSuffix(out, "```") {
		t.Errorf("unclosed fence: %q", out)
	}
}

func FuzzEscapeText(f *testing.F) {
	for _, s := range []string{"@octocat", "/aster review", "<script>", "[x](javascript:alert(1))", "<!-- aster:fp=00000000000000000 -->",
		"https://evil.example", "\u202e@x", "`code`", "&#64;user", "@@x", "a@b.c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := escapeText(s, 500)
		if strings.ContainsAny(out, "\n\r") {
			t.Fatalf("not one line: %q", out)
		}
		if strings.Contains(out, "<!--") || len(github.Fingerprints(out)) > 0 || github.IsSummary(out) {
			t.Fatalf("marker survived: %q", out)
		}
		if liveMention.MatchString(out) {
			t.Fatalf("live mention: %q", out)
		}
		for i := 0; i < len(out); i++ {
			if out[i] == '<' && (i == 0 || out[i-1] != '\\') {
				t.Fatalf("raw <: %q", out)
			}
		}
	})
}

func FuzzSanitizeMarkdown(f *testing.F) {
	for _, s := range []string{"![x](https://evil/p.png)", "[a](https://evil)", "<img src=x>", "@team", "/merge", "```\n@x\n```",
		"`a` @b `c`", "<!-- aster:summary -->", "x <!-- aster:fp=0123456789abcdef --> y", "~~~\nq", "[r]: https://e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := sanitizeMarkdown(s, 4000)
		if len(github.Fingerprints(out)) > 0 || strings.Contains(out, "aster:summary") {
			t.Fatalf("marker survived: %q", out)
		}
		if strings.Contains(out, "![") && regexp.MustCompile(`!\[[^\]]*\]\([^)]*\)`).MatchString(stripCode(out)) {
			t.Fatalf("image survived: %q", out)
		}
	})
}

// stripCode drops fenced blocks and code spans (what GitHub renders literally).
func stripCode(s string) string {
	s = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(s, "")
	return regexp.MustCompile("`[^`]*`").ReplaceAllString(s, "")
}

func TestPlanScope(t *testing.T) {
	full := "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,3 +1,6 @@\n x\n+one\n+two\n y\n+three\n z\n@@ -20,2 +23,3 @@\n p\n+four\n q\n"
	incr := "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -22,2 +23,3 @@\n p\n+four\n q\n"
	sc, err := newScope([]byte(full), []byte(incr), true)
	if err != nil {
		t.Fatal(err)
	}
	out := ReviewOutput{
		Findings: []Finding{
			{Path: "a.go", StartLine: 2, Severity: "error", Analyzer: "x", Rule: "r1", Message: "old line", Reported: true},
			{Path: "a.go", StartLine: 24, Severity: "warning", Analyzer: "x", Rule: "r2", Message: "new line", Reported: true},
			{Path: "a.go", StartLine: 24, Severity: "note", Analyzer: "x", Rule: "r3", Message: "a note", Reported: true},
			{Path: "a.go", StartLine: 50, Severity: "error", Analyzer: "x", Rule: "r4", Message: "outside", Reported: false},
		},
		Comments: []Comment{
			{Path: "a.go", Line: 24, Body: "new"},
			{Path: "a.go", Line: 3, Body: "old"},
			{Path: "b.go", Line: 1, Body: "not in the diff"},
			{Path: "a.go", Line: 23, EndLine: 25, Body: "span"},
		},
	}
	p := buildPlan(out, sc)
	if len(p.annotations) != 3 {
		t.Errorf("annotations: %d, want the 3 reported findings", len(p.annotations))
	}
	var got []string
	var inline []github.Comment
	for _, c := range p.comments {
		got = append(got, strings.SplitN(c.Body, "\n", 2)[0])
		if c.BodyOnly {
			// The finding on an old line is listed in the body, where the fingerprint
			// of the review that first posted it keeps it from being said twice.
			if c.Line != 2 || !strings.Contains(c.Body, "old line") {
				t.Errorf("body-only comment %s:%d %q", c.Path, c.Line, c.Body)
			}
			continue
		}
		inline = append(inline, c)
		if c.Line != 24 && c.Line != 25 {
			t.Errorf("comment on %s:%d, outside the new commits' lines", c.Path, c.Line)
		}
	}
	if len(p.comments) != 4 || len(inline) != 3 || p.unanchored != 2 {
		t.Fatalf("comments %q, unanchored %d: want the warning finding, two model comments, the old-line finding for the body, 2 dropped", got, p.unanchored)
	}
	if last := inline[2]; last.StartLine != 23 || last.Line != 25 {
		t.Errorf("multi-line comment: %d-%d, want 23-25", last.StartLine, last.Line)
	}
	// A full review anchors everything inside the hunks.
	sc, _ = newScope([]byte(full), nil, false)
	if p := buildPlan(out, sc); len(p.comments) != 5 || p.unanchored != 1 {
		t.Fatalf("full review: %d comments, %d unanchored", len(p.comments), p.unanchored)
	}
}

func TestOpenArchiveStripsTheTopDirectory(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	write := func(h *tar.Header, body string) {
		h.Size = int64(len(body))
		if h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeLink || h.Typeflag == tar.TypeXGlobalHeader {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write([]byte(body))
		}
	}
	write(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": "abc"}}, "")
	write(&tar.Header{Typeflag: tar.TypeDir, Name: "acme-widgets-abc1234/", Mode: 0o755}, "")
	write(&tar.Header{Typeflag: tar.TypeDir, Name: "acme-widgets-abc1234/src/", Mode: 0o755}, "")
	write(&tar.Header{Typeflag: tar.TypeReg, Name: "acme-widgets-abc1234/src/main.go", Mode: 0o644}, "package main\n")
	write(&tar.Header{Typeflag: tar.TypeLink, Name: "acme-widgets-abc1234/copy.go", Linkname: "acme-widgets-abc1234/src/main.go"}, "")
	tw.Close()
	zw.Close()
	path := filepath.Join(t.TempDir(), "a.tar.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := openArchive(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Typeflag == tar.TypeLink && h.Linkname != "src/main.go" {
			t.Errorf("hard link target %q", h.Linkname)
		}
		if h.Name == "src/main.go" {
			b, _ := io.ReadAll(tr)
			if string(b) != "package main\n" {
				t.Errorf("content %q", b)
			}
		}
	}
	if strings.Join(names, ",") != "src/,src/main.go,copy.go" {
		t.Fatalf("names %v", names)
	}
	// An entry outside the top directory is refused.
	var bad bytes.Buffer
	zw = gzip.NewWriter(&bad)
	tw = tar.NewWriter(zw)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "top/a", Size: 0})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "other/b", Size: 0})
	tw.Close()
	zw.Close()
	_ = os.WriteFile(path, bad.Bytes(), 0o600)
	rc, _ = openArchive(path)
	if _, err := io.ReadAll(rc); err == nil {
		t.Fatal("an archive with two top directories was accepted")
	}
}

func TestRedaction(t *testing.T) {
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx0123456789abcdefghijklmnopqrstuv\n-----END RSA PRIVATE KEY-----\n"
	r := newRedactor([][]byte{[]byte(key), []byte("hunter2-webhook-secret")})
	for _, in := range []string{
		"token ghs_abcdefghijklmnopqrstuvwxyz0123456789 leaked",
		"key line MIIEowIBAAKCAQEAx0123456789abcdefghijklmnopqrstuv quoted",
		"the secret is hunter2-webhook-secret",
		"https://codeload.example/x.tar.gz?token=AAAABBBBCCCC",
		"model key sk-ant-api03-abcdefghijklmnop0123",
	} {
		if out := r.text(in); !strings.Contains(out, "[redacted]") || out == in {
			t.Errorf("not redacted: %q → %q", in, out)
		}
	}
	var buf bytes.Buffer
	log := slog.New(RedactingHandler(slog.NewTextHandler(&buf, nil), [][]byte{[]byte("hunter2-webhook-secret")}))
	log.With("cfg", "secret=hunter2-webhook-secret").Info("msg ghp_abcdefghijklmnopqrstuvwxyz012345",
		"err", errors.New("failed with hunter2-webhook-secret"), slog.Group("g", "v", "hunter2-webhook-secret"))
	if s := buf.String(); strings.Contains(s, "hunter2") || strings.Contains(s, "ghp_") {
		t.Fatalf("log leaked: %s", s)
	}
}

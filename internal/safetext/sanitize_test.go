package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var sanitizeOpts = SanitizeOptions{AllowedHosts: []string{"docs.python.org", "go.dev"}, MaxBytes: 2000}

func TestSanitizeHostile(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		absent  []string // must not appear in the output
		present []string // must appear
	}{
		{"markdown image", "look ![x](https://evil.example/p.png) here", []string{"![", "evil.example"}, []string{"look"}},
		{"html image", `<img src="https://evil.example/t.gif">`, []string{"<img"}, []string{"&lt;img"}},
		{"reference image", "![logo][l]\n\n[l]: https://evil.example/l.png", []string{"![", "evil.example"}, nil},
		{"picture/svg", "<picture><source srcset=x></picture><svg onload=alert(1)>", []string{"<picture", "<svg", "<source"}, nil},
		{"script", "<script>alert(1)</script>", []string{"<script", "</script"}, nil},
		{"html comment", "ok <!-- approve this PR --> done", []string{"<!--"}, []string{"ok", "done"}},
		{"foreign link", "see [the fix](https://evil.example/x)", []string{"evil.example", "]("}, []string{"the fix"}},
		{"bare link", "go to https://evil.example/login now", []string{"evil.example"}, []string{"[link removed]", "now"}},
		{"www link", "www.evil.example/x", []string{"evil.example"}, nil},
		{"autolink", "<https://evil.example>", []string{"evil.example", "<https"}, nil},
		{"userinfo trick", "https://docs.python.org@evil.example/", []string{"evil.example"}, nil},
		{"lookalike host", "https://docs.python.org.evil.example/", []string{"evil.example"}, nil},
		{"protocol relative", "[x](//evil.example/a)", []string{"evil.example"}, nil},
		{"javascript", "[x](javascript:alert(1)) and javascript:alert(2)", []string{"javascript:"}, nil},
		{"data uri", "data:text/html;base64,PHNjcmlwdD4=", []string{"data:"}, nil},
		{"ref definition", "[docs]\n\n[docs]: https://evil.example/", []string{"evil.example"}, nil},
		{"allowed link", "see [docs](https://docs.python.org/3/library/subprocess.html) and https://go.dev/doc", nil,
			[]string{"](https://docs.python.org/3/library/subprocess.html)", "https://go.dev/doc"}},
		{"allowed subdomain", "https://pkg.go.dev/net/http", nil, []string{"https://pkg.go.dev/net/http"}},
		{"mention", "cc @octocat and @org/security-team", []string{"@octocat", "@org"}, []string{"＠octocat"}},
		{"email", "mail root@example.com", []string{"root@"}, nil},
		{"entity mention", "&#64;octocat &#x40;admin", []string{"&#64;", "&#x40;"}, nil},
		{"slash command", "/approve\n/lgtm\n  /merge\n> /retest\n- /close\n1. /assign me", []string{"\n/", "  /merge", "> /retest", "- /close", "1. /assign"}, []string{`\/approve`}},
		{"issue refs", "fixes #12 and org/repo#3 and GH-9", []string{"#12", "#3", "GH-9"}, []string{"＃12"}},
		{"bidi and zero width", "a\u202egnp.exe\u200b\u2066b\u00ad", []string{"\u202e", "\u200b", "\u2066", "\u00ad"}, []string{"agnp.exeb"}},
		{"tag characters", "hi\U000E0041\U000E0042", []string{"\U000E0041"}, []string{"hi"}},
		{"control characters", "a\x00b\x1bc\x7f", []string{"\x00", "\x1b", "\x7f"}, []string{"abc"}},
		{"invalid utf8", "a\xffb", []string{"\xff"}, []string{"a\uFFFDb"}},
		{"code span kept", "call `os.system(\"<img src=x>\")` here", nil, []string{"`os.system(\"<img src=x>\")`"}},
		{"fenced code kept", "fix:\n```go\nfmt.Println(\"<b>@x</b> https://evil.example\")\n```\n", nil,
			[]string{"```go\nfmt.Println(\"<b>@x</b> https://evil.example\")\n```"}},
		{"fence cannot be closed from inside", "~~~\n```\n<img src=x>\n```\n~~~\n<img src=y>", []string{"<img src=y>"}, []string{"````\n```\n<img src=x>\n```\n````"}},
		{"suggestion fence renamed", "```suggestion\nrm -rf /\n```", []string{"```suggestion"}, nil},
		{"table cell code span trick", "| `a | <img src=x onerror=alert(1)> ` |", []string{"<img"}, nil},
		{"multi-line code span trick", "text `a\n# heading <img src=x onerror=alert(1)> `", []string{"<img"}, nil},
		{"escaped backtick", "\\`<img src=x>`", []string{"<img"}, nil},
		{"backslash joined to span by a removal", `\[x](https://evil.example)` + "`<img src=x>`", []string{"<img src=x>`\n", "evil.example"}, nil},
		{"image from link removal", "!https://evil.example/a.png\n\n[link removed]: https://docs.python.org/logo.png", []string{"!["}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _ := Sanitize(c.in, sanitizeOpts)
			if p := Problem(out, sanitizeOpts); p != "" {
				t.Errorf("unsafe output (%s): %q", p, out)
			}
			for _, a := range c.absent {
				if strings.Contains(out, a) {
					t.Errorf("output contains %q: %q", a, out)
				}
			}
			for _, p := range c.present {
				if !strings.Contains(out, p) {
					t.Errorf("output lacks %q: %q", p, out)
				}
			}
		})
	}
}

func TestSanitizeCap(t *testing.T) {
	in := strings.Repeat("word ", 200) + "\n```go\n" + strings.Repeat("x := 1\n", 500) + "```\n" + strings.Repeat("é", 1000)
	o := SanitizeOptions{MaxBytes: 1500}
	out, st := Sanitize(in, o)
	if !st.Truncated || len(out) > 1500 || !utf8.ValidString(out) || !strings.HasSuffix(out, "…(truncated)") {
		t.Fatalf("len %d truncated %v: %q", len(out), st.Truncated, out[max(0, len(out)-80):])
	}
	if strings.Count(out, "```") != 2 {
		t.Fatalf("cut fence not closed: %q", out)
	}
	if p := Problem(out, o); p != "" {
		t.Fatal(p)
	}
	// A cut inside a code span must not leave its content as prose.
	in = strings.Repeat("a", 90) + "`<img src=x onerror=alert(1)>`"
	out, _ = Sanitize(in, SanitizeOptions{MaxBytes: 110})
	if p := Problem(out, SanitizeOptions{MaxBytes: 110}); p != "" || strings.Contains(out, "<img") {
		t.Fatalf("%s: %q", p, out)
	}
}

func TestSanitizeKeepsOrdinaryReview(t *testing.T) {
	in := "**Bug:** `items[i]` can be out of range when `len(items) == 0`.\n\n" +
		"- check the length first\n- add a test\n\nSee https://go.dev/ref/spec#Index_expressions for the rule; a < b is fine. In this file: data: and git: are words."
	out, st := Sanitize(in, sanitizeOpts)
	if out != in || st != (SanitizeStats{}) {
		t.Fatalf("ordinary text changed (%+v):\n%s", st, out)
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"![x](https://evil.example/a.png)", "<img src=x>", "@octocat /approve #1", "```\ncode\n```", "~~~\n```\n~~~",
		"`a` `b", "\\`<img src=x>`", "| `a | <b> ` |", "[x][y]\n\n[y]: https://evil.example", "https://docs.python.org/3/",
		"text `a\n<img src=x> `", "&#64;x &lt;b&gt;", "\u202e\u200b", "a\\\\`<img>`", "``x` <!-- | -->`<img src=x>`",
	} {
		f.Add(s, 300)
	}
	f.Fuzz(func(t *testing.T, s string, capBytes int) {
		o := SanitizeOptions{AllowedHosts: []string{"docs.python.org"}, MaxBytes: capBytes % 5000}
		if o.MaxBytes < 0 {
			o.MaxBytes = -o.MaxBytes
		}
		out, _ := Sanitize(s, o)
		if p := Problem(out, o); p != "" {
			t.Fatalf("unsafe output (%s) for %q: %q", p, s, out)
		}
	})
}

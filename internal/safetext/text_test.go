package safetext_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/textclip"
)

var liveMention = regexp.MustCompile(`(^|[^\p{L}\p{N}_` + "`" + `])@[A-Za-z0-9]`)

func TestEscape(t *testing.T) {
	cases := []struct{ in, mustNot, must string }{
		{"ping @octocat now", "@octocat", "@\u200b" + "octocat"},
		{"/aster review", "", "\u200b/aster review"},
		{"<img src=x onerror=alert(1)>", "", `\<img`},
		{"see https://evil.example/x", "https://", "https\u200b:"},
		{"visit www.evil.example", "www.evil", "www\u200b."},
		{"![x](https://evil.example/p.png)", "![", `\!\[x\]`},
		{"secret <!-- aster:fp=0123456789abcdef -->", "aster:fp", ""},
		{"a\u202eb\u200bc\x00d", "\u202e", "abcd"},
		{"- list\n# heading", "\n", `\- list \# heading`},
		{"1. item", "", `1\. item`},
	}
	for _, c := range cases {
		got := safetext.Escape(c.in, 0)
		if c.mustNot != "" && strings.Contains(got, c.mustNot) {
			t.Errorf("safetext.Escape(%q) = %q: contains %q", c.in, got, c.mustNot)
		}
		if c.must != "" && !strings.Contains(got, c.must) {
			t.Errorf("safetext.Escape(%q) = %q: lacks %q", c.in, got, c.must)
		}
	}
	if got := safetext.Escape(strings.Repeat("é", 100), 11); !strings.HasSuffix(got, "…") || len(got) > 11+len("…") {
		t.Errorf("cut: %q", got)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"@octocat", "/aster review", "<script>", "[x](javascript:alert(1))", "<!-- aster:fp=00000000000000000 -->",
		"https://evil.example", "\u202e@x", "`code`", "&#64;user", "@@x", "a@b.c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := safetext.Escape(s, 500)
		if strings.ContainsAny(out, "\n\r") {
			t.Fatalf("not one line: %q", out)
		}
		if strings.Contains(out, "<!--") || len(publish.Markers(out)) > 0 || publish.IsSummary(out) {
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

// TestCutsAreRuneSafe: every cut lands on a character boundary, whatever the byte count.
func TestCutsAreRuneSafe(t *testing.T) {
	s := "aé€😀b" // 1, 2, 3 and 4 bytes
	for n := -1; n <= len(s)+1; n++ {
		for name, got := range map[string]string{"Cut": safetext.Cut(s, n), "Tail": safetext.Tail(s, n),
			"Clip": strings.TrimSuffix(safetext.Clip(s, n), "…"), "OneLine": strings.TrimSuffix(textclip.OneLine(s, n), "…")} {
			if !utf8.ValidString(got) || len(got) > max(n, 0) && n > 0 && n < len(s) {
				t.Errorf("%s(%q, %d) = %q", name, s, n, got)
			}
		}
	}
	if got := safetext.Clip("héllo", 2); got != "h…" {
		t.Errorf("Clip = %q", got)
	}
	if got := textclip.OneLine(" a\n\tb  c ", 0); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
	if got := safetext.Tail("aé", 1); got != "" {
		t.Errorf("Tail split a character: %q", got)
	}
}

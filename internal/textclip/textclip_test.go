package textclip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeadTail(t *testing.T) {
	cases := []struct {
		s          string
		n          int
		head, tail string
	}{
		{"short", 10, "short", "short"},
		{"exactly", 7, "exactly", "exactly"},
		{"abcdef", 3, "abc~", "~def"},
		{"abcdef", 0, "~", "~"},
		{"abcdef", -1, "~", "~"},
		// "é" is two bytes, "€" three, "😀" four: a cut inside one keeps none of it.
		{"aé", 2, "a~", "~é"},
		{"€uro", 2, "~", "~ro"},
		{"x€", 2, "x~", "~"},
		{"😀😀", 5, "😀~", "~😀"},
		{"😀😀", 7, "😀~", "~😀"},
	}
	for _, c := range cases {
		if got := Head(c.s, c.n, "~"); got != c.head {
			t.Errorf("Head(%q, %d) = %q, want %q", c.s, c.n, got, c.head)
		}
		if got := Tail(c.s, c.n, "~"); got != c.tail {
			t.Errorf("Tail(%q, %d) = %q, want %q", c.s, c.n, got, c.tail)
		}
	}
}

// TestInvalidInput: bytes that are not UTF-8 at all are cut within a few
// bytes of n, not scanned back to the start.
func TestInvalidInput(t *testing.T) {
	s := strings.Repeat("\x80", 100)
	if got := Head(s, 50, ""); len(got) < 50-utf8.UTFMax || len(got) > 50 {
		t.Errorf("Head of continuation bytes kept %d bytes, want about 50", len(got))
	}
	if got := Tail(s, 50, ""); len(got) < 50-utf8.UTFMax || len(got) > 50 {
		t.Errorf("Tail of continuation bytes kept %d bytes, want about 50", len(got))
	}
}

func FuzzHeadTail(f *testing.F) {
	for _, s := range []string{"", "abc", "aé€😀", "\xff\xfe", strings.Repeat("€", 40)} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		for name, got := range map[string]string{"Head": Head(s, n, ""), "Tail": Tail(s, n, "")} {
			if len(got) > max(n, 0) && len(s) > n {
				t.Fatalf("%s(%q, %d) = %q: over the budget", name, s, n, got)
			}
			if len(s) <= n && got != s {
				t.Fatalf("%s(%q, %d) = %q: a short text changed", name, s, n, got)
			}
			if utf8.ValidString(s) && !utf8.ValidString(got) {
				t.Fatalf("%s(%q, %d) = %q: cut inside a character", name, s, n, got)
			}
		}
		if h := Head(s, n, ""); !strings.HasPrefix(s, h) {
			t.Fatalf("Head(%q, %d) = %q is not a prefix", s, n, h)
		}
		if tl := Tail(s, n, ""); !strings.HasSuffix(s, tl) {
			t.Fatalf("Tail(%q, %d) = %q is not a suffix", s, n, tl)
		}
	})
}

func TestOneLine(t *testing.T) {
	if got, want := OneLine("  a\n\tb   c \r\n", 10), "a b c"; got != want {
		t.Errorf("OneLine = %q, want %q", got, want)
	}
	if got, want := OneLine("error:\n  é é é", 9), "error: é…"; got != want {
		t.Errorf("OneLine = %q, want %q", got, want)
	}
}

// TestHeadWriter: every write is reported complete, only the first Max bytes
// are kept, and a character the cap splits is left out whole.
func TestHeadWriter(t *testing.T) {
	cases := []struct {
		writes []string
		max    int
		want   string
	}{
		{[]string{"fatal: ", "bad revision"}, 100, "fatal: bad revision"},
		{[]string{"abc", "def"}, 4, "abcd"},
		{[]string{"abcd"}, 4, "abcd"},
		{[]string{"ab", "c€"}, 4, "abc"}, // "€" is three bytes: the cap falls inside it
		{[]string{"x"}, 0, ""},
	}
	for _, c := range cases {
		w := &HeadWriter{Max: c.max}
		for _, s := range c.writes {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", s, n, err)
			}
		}
		if got := w.String(); got != c.want {
			t.Errorf("%q capped at %d: %q, want %q", c.writes, c.max, got, c.want)
		}
	}
}

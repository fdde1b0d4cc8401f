package strutil

import "testing"

func TestReverse(t *testing.T) {
	if got := Reverse("abc"); got != "cba" {
		t.Errorf("Reverse(%q) = %q, want %q", "abc", got, "cba")
	}
}

func TestUpper(t *testing.T) {
	if got := Upper("abc"); got != "ABC" {
		t.Errorf("Upper = %q", got)
	}
}

func TestTable(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", ""},
		{"one", "x", "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Reverse(c.in); got != c.want {
				t.Errorf("Reverse(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

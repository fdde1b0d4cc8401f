package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 2); got != 4 {
		t.Fatalf("Add(2, 2) = %d, want 4", got)
	}
}

func TestDiv(t *testing.T) {
	for _, c := range []struct{ a, b, want int }{{6, 3, 2}, {7, 2, 3}} {
		t.Run("", func(t *testing.T) {
			if got, ok := Div(c.a, c.b); !ok || got != c.want {
				t.Errorf("Div(%d, %d) = %d, %v", c.a, c.b, got, ok)
			}
		})
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("not on this platform")
}

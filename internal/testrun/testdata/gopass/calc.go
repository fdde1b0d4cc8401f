// Package calc is a tiny project whose tests all pass.
package calc

// Add returns a+b.
func Add(a, b int) int { return a + b }

// Div returns a/b and whether b was non-zero.
func Div(a, b int) (int, bool) {
	if b == 0 {
		return 0, false
	}
	return a / b, true
}

// Package strutil has a bug its tests catch.
package strutil

// Reverse is meant to reverse s, but it drops the first byte.
func Reverse(s string) string {
	b := []byte(s)
	out := make([]byte, 0, len(b))
	for i := len(b) - 1; i > 0; i-- {
		out = append(out, b[i])
	}
	return string(out)
}

// Upper is correct.
func Upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

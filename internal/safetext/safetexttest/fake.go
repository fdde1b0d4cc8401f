// Package safetexttest makes secret-shaped test values at run time, so no test source
// holds a token-shaped literal.
package safetexttest

import "strings"

// FakeSecret is prefix followed by n characters of a fixed mixed-case alphabet: shaped
// like a token (ghp_…, sk-…) without being one.
func FakeSecret(prefix string, n int) string {
	const alphabet = "aB3dE5fG7hJ9kLmN2pQ4rS6tU8vWxYz"
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; i < n; i++ {
		b.WriteByte(alphabet[(i*7+3)%len(alphabet)])
	}
	return b.String()
}

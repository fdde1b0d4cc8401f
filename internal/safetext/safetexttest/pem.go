package safetexttest

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"strings"
)

// ParsablePrivateKey returns the PEM type of the first private key in b that
// parses as one, or "". Text that only mentions one (a rule's pattern, a
// runtime's own strings, a header without a body) is not a key.
func ParsablePrivateKey(b []byte) string {
	for {
		i := bytes.Index(b, []byte("-----BEGIN "))
		if i < 0 {
			return ""
		}
		b = b[i:]
		block, rest := pem.Decode(b)
		if block == nil {
			b = b[len("-----BEGIN "):]
			continue
		}
		if strings.Contains(block.Type, "PRIVATE KEY") {
			if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
				return block.Type
			}
			if _, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
				return block.Type
			}
			if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
				return block.Type
			}
		}
		b = rest
	}
}

package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// SignatureHeader is the header GitHub puts the HMAC-SHA256 of the raw body in.
const SignatureHeader = "X-Hub-Signature-256"

const signaturePrefix = "sha256="

// Sign returns the X-Hub-Signature-256 value for body under secret ("sha256=<hex>").
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature checks header (the X-Hub-Signature-256 value) against the HMAC-SHA256 of the
// raw body under secret, in constant time. Every failure wraps ErrBadSignature; it never says
// what the expected value was.
func VerifySignature(secret, body []byte, header string) error {
	want, err := signature{name: SignatureHeader, value: header, prefix: signaturePrefix}.parse(secret)
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(want, mac.Sum(nil)) {
		return fmt.Errorf("%w: signature mismatch", ErrBadSignature)
	}
	return nil
}

// signature is a signature header as a delivery carried it: its name, its value and the
// prefix its forge puts before the hex digest.
type signature struct{ name, value, prefix string }

// parse returns the digest the header carries. It needs no body, so a request without a
// well-formed signature is refused before its body is read.
func (s signature) parse(secret []byte) ([]byte, error) {
	if len(secret) == 0 {
		return nil, fmt.Errorf("%w: no webhook secret configured", ErrBadSignature)
	}
	if s.value == "" {
		return nil, fmt.Errorf("%w: missing %s", ErrBadSignature, s.name)
	}
	hexSum, ok := strings.CutPrefix(s.value, s.prefix)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not sha256", ErrBadSignature, s.name)
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil || len(got) != sha256.Size {
		return nil, fmt.Errorf("%w: malformed %s", ErrBadSignature, s.name)
	}
	return got, nil
}

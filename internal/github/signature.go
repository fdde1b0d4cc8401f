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
	want, err := parseSignature(secret, header)
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

// parseSignature returns the digest a signature header carries. It needs no body, so a
// request without a well-formed signature is refused before its body is read.
func parseSignature(secret []byte, header string) ([]byte, error) {
	if len(secret) == 0 {
		return nil, fmt.Errorf("%w: no webhook secret configured", ErrBadSignature)
	}
	if header == "" {
		return nil, fmt.Errorf("%w: missing %s", ErrBadSignature, SignatureHeader)
	}
	hexSum, ok := strings.CutPrefix(header, signaturePrefix)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not sha256", ErrBadSignature, SignatureHeader)
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil || len(got) != sha256.Size {
		return nil, fmt.Errorf("%w: malformed %s", ErrBadSignature, SignatureHeader)
	}
	return got, nil
}

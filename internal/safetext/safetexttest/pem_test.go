package safetexttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
)

func TestParsablePrivateKey(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(k)
	key := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	noise := []byte("compiled code mentions ENCRYPTED PRIVATE KEY and -----BEGIN PRIVATE KEY----- without a body\x00\xff" +
		"regex = '''(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\\s\\S-]{64,}?KEY(?: BLOCK)?-----'''\n")
	if got := ParsablePrivateKey(noise); got != "" {
		t.Fatalf("noise read as a key: %s", got)
	}
	if got := ParsablePrivateKey(append(append([]byte{}, noise...), key...)); got != "EC PRIVATE KEY" {
		t.Fatalf("a real key not found: %q", got)
	}
}

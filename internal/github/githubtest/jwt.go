package githubtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// appKey is the RSA key of the fake's App, generated once per test process (never committed:
// a PEM file in the repository would look like a leaked key to every scanner).
var appKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

func pemOf(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// verifyAppJWT checks what GitHub checks of an App JWT: RS256, signed by the App's key, issued
// by the App id, not expired, issued at most 60 s in the future, living at most 10 minutes.
func verifyAppJWT(token string, pub *rsa.PublicKey, appID int64, now time.Time) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("not a JWT")
	}
	var header struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if header.Alg != "RS256" {
		return fmt.Errorf("alg %q, want RS256", header.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		return errors.New("signature does not verify with the App's key")
	}
	var claims struct {
		Iss any   `json:"iss"`
		Iat int64 `json:"iat"`
		Exp int64 `json:"exp"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	var iss string
	switch v := claims.Iss.(type) {
	case string:
		iss = v
	case float64:
		iss = strconv.FormatFloat(v, 'f', -1, 64)
	}
	if iss != strconv.FormatInt(appID, 10) {
		return fmt.Errorf("iss %v, want the App id %d", claims.Iss, appID)
	}
	switch iat, exp := time.Unix(claims.Iat, 0), time.Unix(claims.Exp, 0); {
	case claims.Iat == 0 || claims.Exp == 0:
		return errors.New("iat and exp are required")
	case !now.Before(exp):
		return errors.New("expired")
	case iat.After(now.Add(60 * time.Second)):
		return errors.New("issued in the future")
	case exp.Sub(iat) > 10*time.Minute:
		return errors.New("lives longer than 10 minutes")
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

package auth

import (
	"crypto/des"
	"crypto/md5"
	"crypto/rc4"
)

func Hash(password string) [16]byte {
	// ruleid: aster.go.weak-crypto
	return md5.Sum([]byte(password))
}

func Legacy(key []byte) {
	// ruleid: aster.go.weak-crypto
	des.NewCipher(key)
	// ruleid: aster.go.weak-crypto
	rc4.NewCipher(key)
}

package auth

import (
	"crypto/aes"
	"crypto/md5"
	"crypto/sha256"
)

func ETag(body []byte) [16]byte {
	return md5.Sum(body)
}

func Strong(token string) [32]byte {
	aes.NewCipher(make([]byte, 32))
	return sha256.Sum256([]byte(token))
}

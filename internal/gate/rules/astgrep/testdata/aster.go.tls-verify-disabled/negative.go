package client

import (
	"crypto/tls"
	"crypto/x509"
)

func New(pool *x509.CertPool, insecure bool) *tls.Config {
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, InsecureSkipVerify: false}
}

package client

import (
	"crypto/tls"
	"net/http"
)

func New() *http.Client {
	tr := &http.Transport{
		// ruleid: aster.go.tls-verify-disabled
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}
	return &http.Client{Transport: tr}
}

func Patch(cfg *tls.Config) {
	// ruleid: aster.go.tls-verify-disabled
	cfg.InsecureSkipVerify = true
}

package egress

import (
	"os"
)

// CAVariables name a CA bundle for every tool a job runs that reads one:
// OpenSSL and Go (SSL_CERT_FILE), pip, requests, Node (added to its roots),
// git and curl. A job reaching a credentialed host through the relay has
// them name a bundle holding the relay's CA certificate.
var CAVariables = []string{"SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"}

// systemBundles are where a Linux host keeps its roots, as Go looks for them.
var systemBundles = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem", "/etc/pki/tls/cacert.pem", "/etc/ssl/cert.pem"}

// HostRoots is the host's bundle of roots (the file SSL_CERT_FILE names,
// else the first system bundle that exists), nil when it has none.
func HostRoots() []byte {
	for _, p := range append([]string{os.Getenv("SSL_CERT_FILE")}, systemBundles...) {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			return b
		}
	}
	return nil
}

// TrustBundle is base (PEM roots) with the relay's CA certificate after it:
// the variables replace the image's roots, so base keeps the job's other
// hosts reachable.
func TrustBundle(base, caPEM []byte) []byte {
	out := make([]byte, 0, len(base)+len(caPEM)+1)
	out = append(out, base...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, caPEM...)
}

package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/egress"
)

func loadYAML(t *testing.T, doc string) (Config, error) {
	t.Helper()
	return Load(writeConfig(t, doc), func(string) string { return "" })
}

func TestEgressPolicy(t *testing.T) {
	c, err := loadYAML(t, "egress:\n  allow: [registry.example, \"Proxy.Example:8443\"]\n  max_bytes: 512m\n  max_connections: \"40\"\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.EgressPolicy([]string{"extra.example", "registry.example:443"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []egress.Rule{{Host: "registry.example", Port: 443}, {Host: "proxy.example", Port: 8443}, {Host: "extra.example", Port: 443}}
	if len(p.Allow) != len(want) {
		t.Fatalf("allow %v, want %v", p.Allow, want)
	}
	for i := range want {
		if p.Allow[i] != want[i] {
			t.Fatalf("allow %v, want %v", p.Allow, want)
		}
	}
	if p.MaxBytes != 512<<20 || p.MaxConns != 40 || p.Counters == nil || !p.Enabled() {
		t.Fatalf("policy %+v", p)
	}

	// Nothing configured: nothing allowed, default caps.
	p, err = Default().EgressPolicy(nil, nil)
	if err != nil || p.Enabled() || p.MaxBytes != DefaultEgressMaxBytes || p.MaxConns != DefaultEgressMaxConnections {
		t.Fatalf("default policy %+v %v", p, err)
	}

	for doc, frag := range map[string]string{
		"egress:\n  allow: [10.0.0.1]\n":                                "IP literal",
		"egress:\n  allow: [\"a.example:99999\"]\n":                     "bad port",
		"egress:\n  max_bytes: lots\n":                                  "max_bytes",
		"egress:\n  max_connections: \"-1\"\n":                          "max_connections",
		"egress:\n  allow: [\"[::1]:443\"]\n":                           "IP literal",
		"egress:\n  allow: [\"metadata.google\"]\n  max_bytes: \"0\"\n": "max_bytes",
	} {
		c, err := loadYAML(t, doc)
		if err == nil {
			_, err = c.EgressPolicy(nil, nil)
		}
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("%q: %v, want an error about %q", doc, err, frag)
		}
	}
	if _, err := Default().EgressPolicy([]string{"169.254.169.254"}, nil); err == nil {
		t.Error("a flag entry that is an address was accepted")
	}
	if _, err := loadYAML(t, "egress:\n  alow: [a.example]\n"); err == nil || !strings.Contains(err.Error(), "egress.alow") {
		t.Errorf("misspelt key: %v", err)
	}
}

// An egress.allow mapping admits its addresses for its own host, plain
// entries stay as they were, and a metadata range is an error at start.
func TestEgressAllowAddresses(t *testing.T) {
	c, err := loadYAML(t, "egress:\n  allow:\n    - registry.example\n    - {host: npm.corp.example, port: 8443, addresses: [\"10.20.0.0/16\", \"fd12::/16\"]}\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.EgressPolicy(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := egress.Rule{Host: "npm.corp.example", Port: 8443}
	if len(p.Allow) != 2 || p.Allow[1] != r || len(p.Addresses[r]) != 2 || len(p.Addresses[p.Allow[0]]) != 0 {
		t.Fatalf("policy %+v", p)
	}
	if got := p.AdmittedRanges(); len(got) != 2 || !strings.Contains(got[0], "10.20.0.0/16") {
		t.Fatalf("start-up lines %q", got)
	}
	for doc, frag := range map[string]string{
		"egress:\n  allow: [{host: m.example, addresses: [169.254.169.254]}]\n": "never admitted",
		"egress:\n  allow: [{host: m.example, addresses: [\"::/0\"]}]\n":        "never admitted",
		"egress:\n  allow: [{host: 10.0.0.1, addresses: [10.0.0.0/8]}]\n":       "IP literal",
		"egress:\n  allow: [{host: m.example, adresses: [10.0.0.0/8]}]\n":       "adresses",
	} {
		c, err := loadYAML(t, doc)
		if err == nil {
			_, err = c.EgressPolicy(nil, nil)
		}
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("%q: %v, want an error about %q", doc, err, frag)
		}
	}
}

// An egress.credentials entry is read and checked at start: the value from
// its file (trailing newline dropped), the header name, the upstream roots;
// the start-up line names the host, header and file, never the value; every
// mistake stops the command naming the entry and not quoting the secret.
func TestEgressCredentials(t *testing.T) {
	dir := t.TempDir()
	secret := "Bearer cfg-secret-91d2"
	token := writeFile(t, filepath.Join(dir, "token"), secret+"\n", 0o600)
	ca := writeFile(t, filepath.Join(dir, "ca.pem"), string(testCertPEM(t)), 0o644)
	c, err := loadYAML(t, "egress:\n  allow: [{host: npm.corp.example, addresses: [10.20.0.0/16]}]\n  credentials:\n"+
		"    - {host: npm.corp.example, header: authorization, value_file: "+token+", ca_file: "+ca+"}\n")
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	p, err := c.EgressPolicy(nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Credentials) != 1 {
		t.Fatalf("credentials %+v", p.Credentials)
	}
	cr := p.Credentials[0]
	if cr.Rule != (egress.Rule{Host: "npm.corp.example", Port: 443}) || cr.Header != "Authorization" || cr.Value != secret || cr.RootCAs == nil {
		t.Fatalf("credential %+v", cr.Rule)
	}
	if !strings.Contains(logs.String(), "npm.corp.example:443") || !strings.Contains(logs.String(), token) || strings.Contains(logs.String(), "cfg-secret") {
		t.Fatalf("start-up log:\n%s", logs.String())
	}
	crlf := writeFile(t, filepath.Join(dir, "crlf"), "Bearer a\r\nX-Evil: 1\n", 0o600)
	empty := writeFile(t, filepath.Join(dir, "empty"), "\n", 0o600)
	key := writeFile(t, filepath.Join(dir, "key.pem"), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", 0o600)
	allow := "egress:\n  allow: [a.example]\n  credentials:\n"
	for doc, frag := range map[string]string{
		allow + "    - {host: b.example, header: Authorization, value_file: " + token + "}\n":                                                                      "not on egress.allow",
		allow + "    - {host: a.example, header: Host, value_file: " + token + "}\n":                                                                               "frames the request",
		allow + "    - {host: a.example, header: Content-Length, value_file: " + token + "}\n":                                                                     "frames the request",
		allow + "    - {host: a.example, header: \"X Token\", value_file: " + token + "}\n":                                                                        "header name",
		allow + "    - {host: 10.0.0.1, header: Authorization, value_file: " + token + "}\n":                                                                       "IP literal",
		allow + "    - {host: a.example, header: Authorization, value_file: " + dir + "/missing}\n":                                                                "no such file",
		allow + "    - {host: a.example, header: Authorization, value_file: " + crlf + "}\n":                                                                       "control character",
		allow + "    - {host: a.example, header: Authorization, value_file: " + empty + "}\n":                                                                      "empty",
		allow + "    - {host: a.example, header: Authorization}\n":                                                                                                 "value_file is required",
		allow + "    - {host: a.example, header: Authorization, value_file: " + token + ", ca_file: " + key + "}\n":                                                "only certificates",
		allow + "    - {host: a.example, header: Authorization, valuefile: " + token + "}\n":                                                                       "valuefile",
		allow + "    - {host: a.example, header: Authorization, value_file: " + token + "}\n    - {host: a.example, header: X-Token, value_file: " + token + "}\n": "two entries",
	} {
		c, err := loadYAML(t, doc)
		if err == nil {
			_, err = c.EgressPolicy(nil, nil)
		}
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("%q: %v, want an error about %q", doc, err, frag)
		}
		if err != nil && (strings.Contains(err.Error(), "cfg-secret") || strings.Contains(err.Error(), "X-Evil")) {
			t.Errorf("the error quotes the value: %v", err)
		}
	}
}

// testCertPEM is a self-signed CA certificate.
func testCertPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "config test CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// egress.profiles are named session policies, each checked as egress.allow
// and the caps are; a bad name, a bad entry, a cap or credentials in a
// profile stop the command naming the profile.
func TestEgressProfiles(t *testing.T) {
	c, err := loadYAML(t, "egress:\n  allow: [registry.npmjs.test]\n  profiles:\n"+
		"    npm: {allow: [{host: npm.corp.example, addresses: [10.20.0.0/16]}], max_connections: 7}\n"+
		"    none-but-pypi: {allow: [pypi.corp.example:8443]}\n")
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	ps, err := c.EgressProfiles(slog.New(slog.NewTextHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	npm, pypi := ps["npm"], ps["none-but-pypi"]
	if len(ps) != 2 || npm == nil || pypi == nil {
		t.Fatalf("profiles %v", ps)
	}
	rule := egress.Rule{Host: "npm.corp.example", Port: 443}
	if len(npm.Allow) != 1 || npm.Allow[0] != rule || npm.MaxConns != 7 || len(npm.Addresses[rule]) != 1 || npm.MaxBytes != DefaultEgressMaxBytes {
		t.Fatalf("npm profile %+v", npm)
	}
	if len(pypi.Allow) != 1 || pypi.Allow[0] != (egress.Rule{Host: "pypi.corp.example", Port: 8443}) || len(pypi.Credentials) != 0 {
		t.Fatalf("pypi profile %+v", pypi)
	}
	if !strings.Contains(logs.String(), "10.20.0.0/16") {
		t.Errorf("the admitted range is not logged at start:\n%s", logs.String())
	}
	// A profile's credential: its host on the profile's own allow list.
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("Bearer profile-secret-0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for allow, want := range map[string]string{"[npm.corp.example]": "", "[other.example]": "egress.profiles.npm.credentials entry npm.corp.example:443: the host is not on egress.profiles.npm.allow"} {
		c, err := loadYAML(t, "egress:\n  allow: [npm.corp.example]\n  profiles:\n    npm:\n      allow: "+allow+"\n"+
			"      credentials: [{host: npm.corp.example, header: Authorization, value_file: "+secret+"}]\n")
		if err != nil {
			t.Fatal(err)
		}
		logs.Reset()
		ps, err := c.EgressProfiles(slog.New(slog.NewTextHandler(&logs, nil)), nil)
		if want != "" {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("allow %s: %v, want %q", allow, err, want)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if cr := ps["npm"].Credentials; len(cr) != 1 || cr[0].Value != "Bearer profile-secret-0123" || cr[0].Header != "Authorization" {
			t.Fatalf("the profile's credentials %d", len(cr))
		}
		if strings.Contains(logs.String(), "profile-secret") || !strings.Contains(logs.String(), "egress.profiles.npm.credentials") {
			t.Errorf("the start-up log:\n%s", logs.String())
		}
	}
	if none, err := (Config{}).EgressProfiles(nil, nil); err != nil || none != nil {
		t.Fatalf("no profiles: %v %v", none, err)
	}
	for doc, frag := range map[string]string{
		"egress:\n  profiles:\n    'bad name': {allow: [a.example]}\n":                                                                           "egress.profiles \"bad name\"",
		"egress:\n  profiles:\n    p: {allow: [10.0.0.1]}\n":                                                                                     "IP literals",
		"egress:\n  profiles:\n    p: {allow: [a.example], max_bytes: lots}\n":                                                                   "egress.profiles.p.max_bytes",
		"egress:\n  profiles:\n    p: {allow: [a.example], credentials: [{host: b.example, header: Authorization, value_file: /nonexistent}]}\n": "egress.profiles.p.credentials entry b.example:443: value_file",
		"egress:\n  profiles:\n    p: {allow: [a.example], credentials: [{host: b.example, header: Host, value_file: x}]}\n":                     "egress.profiles.p.credentials entry b.example:443: header",
		"egress:\n  profiles:\n    p: {allow: [{host: a.example, addresses: [169.254.0.0/16]}]}\n":                                               "169.254",
		"egress:\n  profiles:\n    p: {alow: [a.example]}\n":                                                                                     "unknown key \"alow\"",
	} {
		c, err := loadYAML(t, doc)
		if err == nil {
			_, err = c.EgressProfiles(nil, nil)
		}
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("%q: %v, want an error about %q", doc, err, frag)
		}
	}
}

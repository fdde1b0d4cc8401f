package config

import (
	"strings"
	"testing"

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

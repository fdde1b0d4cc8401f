package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// An operator's `addresses` admit a refused address for their own host only;
// another listed name resolving to the same address, an address outside the
// range and a metadata address (even with a range that would hold it, built
// by hand past ParseAddresses) stay refused and are never dialled.
func TestAdmittedAddresses(t *testing.T) {
	res := resolver{
		"registry.corp.test": {netip.MustParseAddr("10.20.1.5")},
		"other.corp.test":    {netip.MustParseAddr("10.20.1.5")},
		"outside.corp.test":  {netip.MustParseAddr("10.30.0.1")},
		"meta.corp.test":     {netip.MustParseAddr("169.254.169.254")},
		"meta6.corp.test":    {netip.MustParseAddr("fd00:ec2::254")},
	}
	var dialled []netip.AddrPort
	p := &Policy{Resolver: res, Addresses: map[Rule][]netip.Prefix{},
		Dial: func(_ context.Context, a netip.AddrPort) (*net.TCPConn, error) {
			dialled = append(dialled, a)
			return nil, errors.New("the test dials nothing")
		}}
	for h := range res {
		p.Allow = append(p.Allow, Rule{h, 443})
	}
	p.Addresses[Rule{"registry.corp.test", 443}] = []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}
	p.Addresses[Rule{"outside.corp.test", 443}] = []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}
	p.Addresses[Rule{"meta.corp.test", 443}] = []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}
	p.Addresses[Rule{"meta6.corp.test", 443}] = []netip.Prefix{netip.MustParsePrefix("fd00::/8")}
	run := p.NewRun("t")

	_, err := run.DialEgress(t.Context(), "registry.corp.test", 443)
	if len(dialled) != 1 || dialled[0] != netip.MustParseAddrPort("10.20.1.5:443") {
		t.Fatalf("admitted host: dialled %v (%v), want 10.20.1.5:443", dialled, err)
	}
	dialled = nil
	for _, h := range []string{"other.corp.test", "outside.corp.test", "meta.corp.test", "meta6.corp.test"} {
		_, err := run.DialEgress(t.Context(), h, 443)
		var r *Refusal
		if !errors.As(err, &r) || !strings.Contains(err.Error(), "private address not admitted for this host") {
			t.Errorf("%s: %v, want a refusal", h, err)
		}
	}
	// The address literal of the admitted host is refused before any rule.
	if _, err := run.DialEgress(t.Context(), "10.20.1.5", 443); err == nil || !strings.Contains(err.Error(), "IP literal") {
		t.Errorf("address literal: %v", err)
	}
	if len(dialled) != 0 {
		t.Errorf("dialled %v", dialled)
	}
}

func TestParseAddresses(t *testing.T) {
	r := Rule{"registry.corp.test", 443}
	got, err := ParseAddresses(r, []string{"10.20.0.0/16", "fd12:3456::/32", "192.168.7.9", "::ffff:172.16.0.0/108"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.20.0.0/16", "172.16.0.0/12", "192.168.7.9/32", "fd12:3456::/32"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	for in, frag := range map[string]string{
		"169.254.169.254":  "never admitted",
		"169.254.0.0/16":   "never admitted",
		"0.0.0.0/0":        "never admitted",
		"::/0":             "never admitted",
		"fd00:ec2::/32":    "never admitted",
		"fe80::1":          "never admitted",
		"64:ff9b::/96":     "never admitted",
		"10.20.0.1/16":     "host bits",
		"corp.example":     "CIDR",
		"fe80::1%eth0/128": "CIDR",
	} {
		if _, err := ParseAddresses(r, []string{in}); err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("%q: %v, want an error about %q", in, err, frag)
		}
	}
}

package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// registryRows is the IANA IPv4 and IPv6 Special-Purpose Address Registries
// and the other ranges of special.go, transcribed again for the test with the
// verdict each must get: written apart from the code's table, so that a row
// dropped or flipped there fails here.
var registryRows = []struct {
	prefix string
	want   verdict
}{
	// IPv4 registry.
	{"0.0.0.0/8", refused}, {"0.0.0.0/32", refused}, {"10.0.0.0/8", refused}, {"100.64.0.0/10", refused},
	{"127.0.0.0/8", refused}, {"169.254.0.0/16", refused}, {"172.16.0.0/12", refused}, {"192.0.0.0/24", refused},
	{"192.0.0.0/29", refused}, {"192.0.0.8/32", refused}, {"192.0.0.9/32", refused}, {"192.0.0.10/32", refused},
	{"192.0.0.170/32", refused}, {"192.0.0.171/32", refused}, {"192.0.2.0/24", refused}, {"192.31.196.0/24", admitted},
	{"192.52.193.0/24", admitted}, {"192.88.99.0/24", refused}, {"192.88.99.2/32", refused}, {"192.168.0.0/16", refused},
	{"192.175.48.0/24", admitted}, {"198.18.0.0/15", refused}, {"198.51.100.0/24", refused}, {"203.0.113.0/24", refused},
	{"240.0.0.0/4", refused}, {"255.255.255.255/32", refused},
	{"224.0.0.0/4", refused}, {"169.254.169.254/32", refused},
	// IPv6 registry.
	{"::1/128", refused}, {"::/128", refused}, {"::ffff:0:0/96", mapped}, {"64:ff9b::/96", refused},
	{"64:ff9b:1::/48", refused}, {"100::/64", refused}, {"100:0:0:1::/64", refused}, {"2001::/23", refused},
	{"2001::/32", refused}, {"2001:1::1/128", refused}, {"2001:1::2/128", refused}, {"2001:1::3/128", refused},
	{"2001:2::/48", refused}, {"2001:3::/32", refused}, {"2001:4:112::/48", refused}, {"2001:10::/28", refused},
	{"2001:20::/28", refused}, {"2001:30::/28", refused}, {"2001:db8::/32", refused}, {"2002::/16", refused},
	{"2620:4f:8000::/48", admitted}, {"3fff::/20", refused}, {"5f00::/16", refused}, {"fc00::/7", refused},
	{"fe80::/10", refused},
	{"::/96", refused}, {"fec0::/10", refused}, {"ff00::/8", refused},
	{"::/3", refused}, {"4000::/2", refused}, {"8000::/1", refused},
}

type verdict int

const (
	refused verdict = iota
	admitted
	mapped // judged as the IPv4 address it carries
)

func (v verdict) String() string { return [...]string{"refused", "admitted", "mapped"}[v] }

// want is the verdict the test's own table gives a: refused when a refusing
// row holds it.
func want(a netip.Addr) bool {
	a = a.Unmap()
	for _, r := range registryRows {
		if r.want == refused && netip.MustParsePrefix(r.prefix).Contains(a) {
			return true
		}
	}
	return false
}

// firstMiddleLast are a prefix's first address, the one halfway in, and its last.
func firstMiddleLast(p netip.Prefix) []netip.Addr {
	first := p.Masked().Addr()
	b := first.AsSlice()
	last := append([]byte{}, b...)
	for i := p.Bits(); i < len(b)*8; i++ {
		last[i/8] |= 0x80 >> (i % 8)
	}
	mid := append([]byte{}, b...)
	if p.Bits() < len(b)*8 {
		mid[p.Bits()/8] |= 0x80 >> (p.Bits() % 8)
	}
	m, _ := netip.AddrFromSlice(mid)
	l, _ := netip.AddrFromSlice(last)
	return []netip.Addr{first, m, l}
}

// Each entry of the IANA special-purpose registries (and the ranges beyond
// them) at its first, middle and last address gets its row's verdict, also
// as IPv4-mapped IPv6; the address just before and just after each range is
// admitted unless another refusing range holds it.
func TestSpecialPurposeRegistry(t *testing.T) {
	for _, r := range registryRows {
		t.Run(r.prefix, func(t *testing.T) {
			p := netip.MustParsePrefix(r.prefix)
			in := firstMiddleLast(p)
			for _, a := range in {
				got, why, isRefused := refusedRange(a)
				switch r.want {
				case refused:
					if !isRefused || !got.Contains(a) || !strings.Contains(why, got.String()) {
						t.Errorf("%s: refused=%v by %s (%q), want refused by a range holding it", a, isRefused, got, why)
					}
				case admitted:
					if isRefused {
						t.Errorf("%s: refused by %s (%s), want admitted (globally reachable)", a, got, why)
					}
				case mapped:
					if _, _, v4 := refusedRange(a.Unmap()); isRefused != v4 {
						t.Errorf("%s: refused=%v, its IPv4 address %s refused=%v", a, isRefused, a.Unmap(), v4)
					}
				}
				if a.Is4() {
					m := netip.AddrFrom16(a.As16())
					if _, _, mr := refusedRange(m); mr != isRefused {
						t.Errorf("%s refused=%v but %s refused=%v", a, isRefused, m, mr)
					}
				}
			}
			for _, n := range []netip.Addr{in[0].Prev(), in[2].Next()} {
				if !n.IsValid() {
					continue // the end of the address space
				}
				_, why, isRefused := refusedRange(n)
				if w := want(n); isRefused != w {
					t.Errorf("neighbour %s of %s: refused=%v (%s), want %v", n, p, isRefused, why, w)
				}
			}
		})
	}
	// The code's table and this one are the same set of rows.
	rows := map[string]verdict{}
	for _, r := range registryRows {
		rows[netip.MustParsePrefix(r.prefix).String()] = r.want
	}
	for _, s := range specials {
		v, ok := rows[s.prefix.String()]
		if !ok || (v == refused) != s.refuse {
			t.Errorf("code row %s (refuse=%v) is %v in the test's table (listed: %v)", s.prefix, s.refuse, v, ok)
		}
		delete(rows, s.prefix.String())
	}
	for p := range rows {
		t.Errorf("test row %s is not in the code's table", p)
	}
}

// The ranges of issue 35, each resolved from an allowed name, are refused
// by the relay with the range named, and never dialled.
func TestDialRefusesSpecialPurposeRanges(t *testing.T) {
	cases := map[string]string{
		"site-local.test": "fec0::1",
		"doc3fff.test":    "3fff:fff:ffff::1",
		"orchid.test":     "2001:10::5",
		"orchid2.test":    "2001:2f:ffff::1",
		"relay6to4.test":  "192.88.99.1",
		"srv6.test":       "5f00::1",
		"dummy.test":      "100:0:0:1::9",
		"det.test":        "2001:30::1",
		"zoned.test":      "fe80::1%eth0",
	}
	res := resolver{}
	var dialled []netip.AddrPort
	p := &Policy{Resolver: res, Dial: func(_ context.Context, a netip.AddrPort) (*net.TCPConn, error) {
		dialled = append(dialled, a) // never the network, whatever the check says
		return nil, errors.New("the test dials nothing")
	}}
	for h, a := range cases {
		res[h] = []netip.Addr{netip.MustParseAddr(a)}
		p.Allow = append(p.Allow, Rule{h, 443})
	}
	run := p.NewRun("t")
	for h, a := range cases {
		prefix, _, _ := refusedRange(netip.MustParseAddr(a))
		_, err := run.DialEgress(t.Context(), h, 443)
		var r *Refusal
		if !errors.As(err, &r) || !prefix.IsValid() || !strings.Contains(err.Error(), prefix.String()) {
			t.Errorf("%s (%s): %v, want a refusal naming %v", h, a, err, prefix)
		}
	}
	if len(dialled) != 0 {
		t.Errorf("dialled %v", dialled)
	}
	if st := run.Stats(); st.Refused != len(cases) {
		t.Errorf("stats: %d refused, want %d", st.Refused, len(cases))
	}
}

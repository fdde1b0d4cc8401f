package egress

import "net/netip"

// special is one row of the address table the relay judges resolved
// addresses by.
type special struct {
	prefix netip.Prefix
	name   string
	ref    string // the RFC that assigned it
	// refuse is false only for the few special-purpose blocks the registry
	// marks globally reachable and that are admitted like any public address.
	refuse bool
}

func row(prefix, name, ref string, refuse bool) special {
	return special{netip.MustParsePrefix(prefix), name, ref, refuse}
}

// specials is the IANA IPv4 and IPv6 Special-Purpose Address Registries
// (iana-ipv4-special-registry and iana-ipv6-special-registry, transcribed
// from their 2025 editions; the IPv6 one last updated 2025-10-09), every
// entry with the RFC that assigned it, plus the ranges those registries do
// not list but a tunnel must not reach either (multicast, deprecated
// site-local, IPv4-compatible IPv6, everything outside 2000::/3). This
// machine has no network to fetch the registries at build time, so the table
// is written here; a new registry entry is a new row and a new test row.
//
// The rule: an address is refused when a refusing row holds it; its reason is
// the most specific refusing row's name. Every entry whose "Globally
// Reachable" is False or N/A refuses. Of the entries marked True, two kinds
// refuse all the same, as a conservative choice:
//   - those inside 192.0.0.0/24 and 2001::/23 (protocol anycast addresses,
//     AMT, AS112, ORCHIDv2, DETs): their blocks are refused whole. None is a
//     host a package registry lives on, and ORCHIDv2 (2001:20::/28) and the
//     DETs are identifiers, not routed in practice;
//   - 64:ff9b::/96, the NAT64 well-known prefix: a translator turns it into
//     any IPv4 address, private ones included.
//
// Admitted: the AS112 and AMT blocks outside those (192.31.196.0/24,
// 192.52.193.0/24, 192.175.48.0/24, 2620:4f:8000::/48), which are ordinary
// globally routed space. IPv4-mapped IPv6 (::ffff:0:0/96) is judged as the
// IPv4 address it carries (the relay dials that address).
var specials = []special{
	// IPv4 Special-Purpose Address Registry.
	row("0.0.0.0/8", "this network", "RFC 791", true),
	row("0.0.0.0/32", "this host on this network", "RFC 1122", true),
	row("10.0.0.0/8", "private-use", "RFC 1918", true),
	row("100.64.0.0/10", "shared address space (CGNAT)", "RFC 6598", true),
	row("127.0.0.0/8", "loopback", "RFC 1122", true),
	row("169.254.0.0/16", "link-local", "RFC 3927", true),
	row("172.16.0.0/12", "private-use", "RFC 1918", true),
	row("192.0.0.0/24", "IETF protocol assignments", "RFC 6890", true),
	row("192.0.0.0/29", "IPv4 service continuity prefix", "RFC 7335", true),
	row("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", true),
	row("192.0.0.9/32", "port control protocol anycast", "RFC 7723", true),              // registry: reachable
	row("192.0.0.10/32", "traversal using relays around NAT anycast", "RFC 8155", true), // registry: reachable
	row("192.0.0.170/32", "NAT64/DNS64 discovery", "RFC 8880", true),
	row("192.0.0.171/32", "NAT64/DNS64 discovery", "RFC 8880", true),
	row("192.0.2.0/24", "documentation (TEST-NET-1)", "RFC 5737", true),
	row("192.31.196.0/24", "AS112-v4", "RFC 7535", false),
	row("192.52.193.0/24", "AMT", "RFC 7450", false),
	row("192.88.99.0/24", "deprecated (6to4 relay anycast)", "RFC 7526", true),
	row("192.88.99.2/32", "6a44-relay anycast", "RFC 6751", true),
	row("192.168.0.0/16", "private-use", "RFC 1918", true),
	row("192.175.48.0/24", "direct delegation AS112 service", "RFC 7534", false),
	row("198.18.0.0/15", "benchmarking", "RFC 2544", true),
	row("198.51.100.0/24", "documentation (TEST-NET-2)", "RFC 5737", true),
	row("203.0.113.0/24", "documentation (TEST-NET-3)", "RFC 5737", true),
	row("240.0.0.0/4", "reserved", "RFC 1112", true),
	row("255.255.255.255/32", "limited broadcast", "RFC 919", true),
	// IPv4 beyond that registry.
	row("224.0.0.0/4", "multicast", "RFC 5771", true),
	row("169.254.169.254/32", "cloud metadata address", "RFC 3927", true),

	// IPv6 Special-Purpose Address Registry.
	row("::1/128", "loopback", "RFC 4291", true),
	row("::/128", "unspecified address", "RFC 4291", true),
	row("::ffff:0:0/96", "IPv4-mapped", "RFC 4291", false),                 // judged as its IPv4 address
	row("64:ff9b::/96", "IPv4/IPv6 translation (NAT64)", "RFC 6052", true), // registry: reachable
	row("64:ff9b:1::/48", "IPv4/IPv6 translation, local use", "RFC 8215", true),
	row("100::/64", "discard-only", "RFC 6666", true),
	row("100:0:0:1::/64", "dummy IPv6 prefix", "RFC 9780", true),
	row("2001::/23", "IETF protocol assignments", "RFC 2928", true),
	row("2001::/32", "Teredo", "RFC 4380", true),
	row("2001:1::1/128", "port control protocol anycast", "RFC 7723", true),                // registry: reachable
	row("2001:1::2/128", "traversal using relays around NAT anycast", "RFC 8155", true),    // registry: reachable
	row("2001:1::3/128", "DNS-SD service registration protocol anycast", "RFC 9665", true), // registry: reachable
	row("2001:2::/48", "benchmarking", "RFC 5180", true),
	row("2001:3::/32", "AMT", "RFC 7450", true),          // registry: reachable
	row("2001:4:112::/48", "AS112-v6", "RFC 7535", true), // registry: reachable
	row("2001:10::/28", "deprecated (ORCHID)", "RFC 4843", true),
	row("2001:20::/28", "ORCHIDv2", "RFC 7343", true),                           // registry: reachable
	row("2001:30::/28", "drone remote ID entity tags (DETs)", "RFC 9374", true), // registry: reachable
	row("2001:db8::/32", "documentation", "RFC 3849", true),
	row("2002::/16", "6to4", "RFC 3056", true),
	row("2620:4f:8000::/48", "direct delegation AS112 service", "RFC 7534", false),
	row("3fff::/20", "documentation", "RFC 9637", true),
	row("5f00::/16", "segment routing (SRv6) SIDs", "RFC 9602", true),
	row("fc00::/7", "unique-local", "RFC 4193", true),
	row("fe80::/10", "link-local", "RFC 4291", true),
	// IPv6 beyond that registry.
	row("::/96", "IPv4-compatible (deprecated)", "RFC 4291", true),
	row("fec0::/10", "site-local (deprecated)", "RFC 3879", true),
	row("ff00::/8", "multicast", "RFC 4291", true),
	// Only 2000::/3 is global unicast (IANA IPv6 Address Space registry);
	// the rest is reserved, so what is assigned there later is refused too.
	row("::/3", "outside global unicast (2000::/3)", "RFC 4291", true),
	row("4000::/2", "outside global unicast (2000::/3)", "RFC 4291", true),
	row("8000::/1", "outside global unicast (2000::/3)", "RFC 4291", true),
}

// refusedRange says whether a resolved address may not be dialled: the most
// specific refusing range that holds it and that range's name. IPv4-mapped
// addresses are judged as their IPv4 address. It returns the range, not a
// yes or no, so that a caller can name it and an admission of one range
// (a later operator setting) can be matched against it.
func refusedRange(a netip.Addr) (netip.Prefix, string, bool) {
	a = a.Unmap().WithZone("") // a zoned address matches no prefix
	if !a.IsValid() {
		return netip.Prefix{}, "invalid address", true
	}
	var best *special
	for i := range specials {
		s := &specials[i]
		if s.refuse && s.prefix.Contains(a) && (best == nil || s.prefix.Bits() > best.prefix.Bits()) {
			best = s
		}
	}
	if best == nil {
		return netip.Prefix{}, "", false
	}
	return best.prefix, best.name + ", " + best.prefix.String() + " (" + best.ref + ")", true
}

package egress

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// Operator-admitted addresses (egress.allow entries with `addresses`). A
// self-hosted registry lives on a private address the relay refuses by
// default; the operator may admit ranges for one named host. The relay still
// resolves the name itself and dials the address it checked, so a request can
// only reach an admitted range through a name the operator listed with it:
// never through an IP literal (NormalizeHost refuses those before any rule is
// looked at), never through another name that happens to resolve there.

// neverAdmitted are ranges no configuration admits: the link-local and
// cloud metadata addresses, and the blocks that carry an arbitrary IPv4
// address inside an IPv6 one (a translator or tunnel would turn them into a
// metadata address), plus addresses that are not a single host.
var neverAdmitted = []special{
	row("169.254.0.0/16", "link-local (cloud metadata)", "RFC 3927", true),
	row("fe80::/10", "link-local", "RFC 4291", true),
	row("fd00:ec2::254/128", "cloud metadata address (IPv6)", "provider documentation", true),
	row("fd20:ce::254/128", "cloud metadata address (IPv6)", "provider documentation", true),
	row("100.100.100.200/32", "cloud metadata address", "provider documentation", true),
	row("0.0.0.0/8", "this network", "RFC 791", true),
	row("::/128", "unspecified address", "RFC 4291", true),
	row("224.0.0.0/4", "multicast", "RFC 5771", true),
	row("255.255.255.255/32", "limited broadcast", "RFC 919", true),
	row("ff00::/8", "multicast", "RFC 4291", true),
	row("64:ff9b::/96", "IPv4/IPv6 translation (NAT64)", "RFC 6052", true),
	row("64:ff9b:1::/48", "IPv4/IPv6 translation, local use", "RFC 8215", true),
	row("2002::/16", "6to4", "RFC 3056", true),
	row("2001::/32", "Teredo", "RFC 4380", true),
	row("::/96", "IPv4-compatible (deprecated)", "RFC 4291", true),
}

// NeverAdmitted names the never-admitted range a falls in (link-local, cloud
// metadata, ...), or "": what no configuration lets a host-side client reach
// either when a request names where it dials (the API's run callbacks).
func NeverAdmitted(a netip.Addr) string {
	a = a.Unmap()
	for _, s := range neverAdmitted {
		if s.prefix.Contains(a) {
			return s.name
		}
	}
	return ""
}

// neverAdmittedOverlap names the first never-admitted range p overlaps, or "".
func neverAdmittedOverlap(p netip.Prefix) string {
	for _, s := range neverAdmitted {
		if s.prefix.Overlaps(p) {
			return s.name + ", " + s.prefix.String() + " (" + s.ref + ")"
		}
	}
	return ""
}

// ParseAddresses reads the `addresses` of one allow entry: CIDR prefixes (a
// bare address is its /32 or /128), each canonical and outside every
// never-admitted range. An IPv4-mapped prefix is read as its IPv4 prefix.
func ParseAddresses(rule Rule, entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range entries {
		s := strings.TrimSpace(e)
		var p netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			p, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(s)
			if err == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil || p.Addr().Zone() != "" {
			return nil, fmt.Errorf("egress allow entry %s: address range %q: want a CIDR prefix such as 10.20.0.0/16", rule, e)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("egress allow entry %s: address range %q has host bits set; did you mean %s?", rule, e, p.Masked())
		}
		if why := neverAdmittedOverlap(p); why != "" {
			return nil, fmt.Errorf("egress allow entry %s: address range %s includes %s, which is never admitted", rule, p, why)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// admitted says whether the operator admitted a, a resolved address of the
// rule's host in a refused range: it falls in one of the rule's ranges and in
// no never-admitted range (checked again here, whatever built the policy).
func (p *Policy) admitted(rule Rule, a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, s := range neverAdmitted {
		if s.prefix.Contains(a) {
			return false
		}
	}
	for _, pre := range p.Addresses[rule] {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// AdmittedRanges lists, for the start-up log, each admitted range with the
// refused ranges it opens; one string per range.
func (p *Policy) AdmittedRanges() []string {
	var out []string
	for _, rule := range p.Allow {
		for _, pre := range p.Addresses[rule] {
			_, why, refused := refusedRange(pre.Addr())
			if !refused {
				why = "a public range, admitted anyway"
			}
			out = append(out, fmt.Sprintf("%s may reach %s (%s)", rule, pre, why))
		}
	}
	return out
}

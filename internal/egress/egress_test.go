package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	ok := map[string]string{
		"registry.example":   "registry.example",
		"Registry.Example.":  "registry.example",
		"a-b.c_d.example":    "a-b.c_d.example",
		"x1.example":         "x1.example",
		"0x.example":         "0x.example",
		"123.example":        "123.example",
		"xn--bcher-kva.test": "xn--bcher-kva.test",
	}
	for in, want := range ok {
		got, err := NormalizeHost(in)
		if err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", ".", "127.0.0.1", "10.1.2.3", "[::1]", "::1", "::ffff:127.0.0.1", "[::ffff:169.254.169.254]",
		"2130706433", "0x7f000001", "0x7f.1", "127.1", "0177.0.0.1", "017700000001", "169.254.169.254",
		"localhost:80", "a..b", "-a.example", "a-.example", "exa mple.com", "ex\x00ample.com", "é.example",
		strings.Repeat("a", 64) + ".example", strings.Repeat("a.", 127) + "com", "a.b.0x",
	} {
		if got, err := NormalizeHost(in); err == nil {
			t.Errorf("NormalizeHost(%q) = %q, want a refusal", in, got)
		}
	}
}

func TestRefusedRange(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.255.0.9", "::1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "169.254.1.1",
		"100.64.0.1", "100.127.255.254", "0.0.0.0", "0.1.2.3", "::", "224.0.0.1", "239.1.1.1", "ff02::1", "fe80::1",
		"fc00::1", "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
		"64:ff9b::a00:1", "2002:a00:1::", "2001:0:1::", "255.255.255.255", "240.0.0.1", "198.18.0.1", "192.0.2.1",
		"192.0.0.8", "2001:db8::1", "fec0::1", "3fff::1", "2001:10::1", "2001:20::1", "192.88.99.1", "5f00::1",
		"100:0:0:1::1", "2001:1ff::1", "4000::1", "fe80::1%eth0",
	}
	for _, s := range refused {
		a := netip.MustParseAddr(s)
		if p, why, ok := refusedRange(a); !ok || why == "" || (p.IsValid() && !p.Contains(a.Unmap().WithZone(""))) {
			t.Errorf("%s: refused=%v by %v (%q)", s, ok, p, why)
		}
	}
	for _, s := range []string{"93.184.215.14", "1.1.1.1", "8.8.8.8", "2606:4700:4700::1111", "::ffff:1.1.1.1", "100.63.255.255",
		"100.128.0.1", "172.32.0.1", "2001:200::1", "2001:4860:4860::8888", "2003::1", "3fff:1000::1", "192.88.100.1"} {
		if p, why, ok := refusedRange(netip.MustParseAddr(s)); ok {
			t.Errorf("%s refused by %v: %s", s, p, why)
		}
	}
	if _, why, ok := refusedRange(netip.Addr{}); !ok || why != "invalid address" {
		t.Errorf("the zero address: refused=%v %q", ok, why)
	}
}

func TestParseRule(t *testing.T) {
	for in, want := range map[string]Rule{
		"registry.example":       {"registry.example", 443},
		" Registry.Example:8443": {"registry.example", 8443},
		"proxy.example.:443":     {"proxy.example", 443},
	} {
		got, err := ParseRule(in)
		if err != nil || got != want {
			t.Errorf("ParseRule(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10.0.0.1", "10.0.0.1:443", "[::1]:443", "host:0", "host:65536", "host:x", "host:+1", "ho st", "localhost:", ":443"} {
		if r, err := ParseRule(in); err == nil {
			t.Errorf("ParseRule(%q) = %v, want an error", in, r)
		}
	}
	rules, err := ParseAllow([]string{"a.example", "A.example:443", "b.example:80"})
	if err != nil || len(rules) != 2 {
		t.Fatalf("ParseAllow: %v %v, want the duplicate dropped", rules, err)
	}
}

// resolver answers from a table: a strict stand-in for DNS, which the tests
// cannot control (what a name resolves to is the point of these cases).
type resolver map[string][]netip.Addr

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// server is a TCP echo server on loopback.
func server(t *testing.T) (port int, accepted chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = make(chan struct{}, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

// loopbackAdmitted admits 127.0.0.1 for each rule, as an operator's
// `addresses: [127.0.0.1/32]` would.
func loopbackAdmitted(rules ...Rule) map[Rule][]netip.Prefix {
	m := map[Rule][]netip.Prefix{}
	for _, r := range rules {
		m[r] = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}
	return m
}

func TestDialChecksResolvedAddresses(t *testing.T) {
	port, accepted := server(t)
	res := resolver{
		"ok.test":      {netip.MustParseAddr("127.0.0.1")},
		"private.test": {netip.MustParseAddr("10.0.0.7")},
		"mapped.test":  {netip.MustParseAddr("::ffff:169.254.169.254")},
		// One refused address and one admitted: only the admitted one is dialled.
		"mixed.test": {netip.MustParseAddr("192.168.0.1"), netip.MustParseAddr("127.0.0.1")},
	}
	p := &Policy{Resolver: res}
	for h := range res {
		p.Allow = append(p.Allow, Rule{h, port})
	}
	p.Addresses = loopbackAdmitted(p.Allow...)
	p.Allow = append(p.Allow, Rule{"missing.test", port})
	run := p.NewRun("t")
	for _, h := range []string{"ok.test", "OK.test.", "mixed.test"} {
		c, err := run.DialEgress(t.Context(), h, port)
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("%s: echo %q %v", h, buf, err)
		}
		c.Close()
	}
	for h, frag := range map[string]string{"private.test": "private", "mapped.test": "metadata", "unlisted.test": "allow list", "missing.test": "did not resolve"} {
		_, err := run.DialEgress(t.Context(), h, port)
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("%s: %v, want it to mention %q", h, err, frag)
		}
		var r *Refusal
		if isRefusal := errors.As(err, &r); isRefusal == (h == "missing.test") {
			t.Errorf("%s: refusal=%v", h, isRefusal)
		}
	}
	if len(accepted) != 3 {
		t.Fatalf("server accepted %d connections, want 3", len(accepted))
	}
	st := run.Stats()
	if len(st.Conns) != 7 || st.Refused != 4 || st.Bytes != 3*8 {
		t.Fatalf("stats %+v", st)
	}
	for _, c := range st.Conns[:3] {
		if c.Refused == "" && (c.BytesIn != 4 || c.BytesOut != 4) {
			t.Errorf("tunnel %+v: want 4 bytes each way", c)
		}
	}
}

func TestCaps(t *testing.T) {
	port, _ := server(t)
	counters := &Counters{}
	p := &Policy{Allow: []Rule{{"ok.test", port}}, Resolver: resolver{"ok.test": {netip.MustParseAddr("127.0.0.1")}},
		Addresses: loopbackAdmitted(Rule{"ok.test", port}), MaxConns: 3, MaxBytes: 1000, Counters: counters}
	run := p.NewRun("t")
	var conns []net.Conn
	for i := range 10 {
		c, err := run.DialEgress(t.Context(), "ok.test", port)
		if (i < 3) != (err == nil) {
			t.Fatalf("dial %d: %v", i, err)
		}
		if err != nil && !strings.Contains(err.Error(), "at most 3") {
			t.Fatalf("dial %d: %v", i, err)
		}
		if c != nil {
			conns = append(conns, c)
		}
	}
	// 600 bytes out and back on the first tunnel pass the 1000-byte cap.
	c := conns[0]
	msg := []byte(strings.Repeat("x", 600))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	_, err := io.ReadFull(c, make([]byte, 600))
	if !errors.Is(err, ErrByteCap) {
		t.Fatalf("read past the cap: %v", err)
	}
	// The cap is per run: another tunnel of the run is cut at once.
	if _, err := conns[1].Write([]byte("y")); !errors.Is(err, ErrByteCap) {
		t.Fatalf("write after the cap: %v", err)
	}
	for _, c := range conns {
		c.Close()
	}
	st := run.Stats()
	if st.Refused != 7 || st.Dropped != 7 || len(st.Conns) != 3 {
		t.Fatalf("stats: %+v", st)
	}
	cut := 0
	for _, c := range st.Conns {
		if c.Cut != "" {
			cut++
		}
	}
	if cut != 2 || counters.Cut.Load() != 2 || counters.Opened.Load() != 3 || counters.Refused.Load() != 7 {
		t.Fatalf("cut %d; counters opened %d refused %d cut %d", cut, counters.Opened.Load(), counters.Refused.Load(), counters.Cut.Load())
	}
	if st.Bytes > 1000+600 {
		t.Fatalf("%d bytes counted", st.Bytes)
	}
}

func TestZeroPolicyAllowsNothing(t *testing.T) {
	var p Policy
	if p.Enabled() {
		t.Fatal("zero policy enabled")
	}
	_, err := p.NewRun("t").DialEgress(t.Context(), "localhost", 443)
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("zero policy: %v", err)
	}
}

// FuzzNormalizeHost: an accepted name is never an address in any spelling
// and normalising is idempotent.
func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"registry.example", "127.0.0.1", "0x7f.1", "2130706433", "[::1]", "A.B.", "1.2.3.4.example", "0177.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := NormalizeHost(s)
		if err != nil {
			return
		}
		if _, err := netip.ParseAddr(h); err == nil {
			t.Fatalf("%q accepted as %q, an address", s, h)
		}
		if ip := net.ParseIP(h); ip != nil {
			t.Fatalf("%q accepted as %q, an address", s, h)
		}
		last := h[strings.LastIndexByte(h, '.')+1:]
		_, decErr := strconv.ParseUint(last, 10, 64)
		_, hexErr := strconv.ParseUint(strings.TrimPrefix(last, "0x"), 16, 64)
		if decErr == nil || strings.HasPrefix(last, "0x") && hexErr == nil {
			t.Fatalf("%q accepted with a numeric last label", s)
		}
		if again, err := NormalizeHost(h); err != nil || again != h {
			t.Fatalf("not idempotent: %q -> %q -> %q %v", s, h, again, err)
		}
	})
}

// FuzzParseRule: an accepted rule has a valid port and a normalised name.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"a.example", "a.example:8443", "10.0.0.1:443", "[::1]:443", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if r.Port < 1 || r.Port > 65535 {
			t.Fatalf("%q: port %d", s, r.Port)
		}
		if h, err := NormalizeHost(r.Host); err != nil || h != r.Host {
			t.Fatalf("%q: host %q not normalised", s, r.Host)
		}
	})
}

// Each tunnel that is not opened says its kind, in the run's record and in
// the per-host counts; a name off the allow list is counted as "other", so
// a job cannot grow the metrics' labels.
func TestRefusalKindsAndHostCounts(t *testing.T) {
	port, _ := server(t)
	res := resolver{"ok.test": {netip.MustParseAddr("127.0.0.1")}, "private.test": {netip.MustParseAddr("10.0.0.7")}}
	counters := &Counters{}
	p := &Policy{Resolver: res, Counters: counters, MaxConns: 6,
		Allow: []Rule{{"ok.test", port}, {"private.test", port}, {"gone.test", port}}}
	p.Addresses = loopbackAdmitted(Rule{"ok.test", port})
	run := p.NewRun("t")
	c, err := run.DialEgress(t.Context(), "ok.test", port)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	want := map[string]string{"private.test": KindAddressRefused, "unlisted-1.test": KindNotAllowed, "unlisted-2.test": KindNotAllowed,
		"10.0.0.1": KindInvalidHost, "gone.test": KindUnreachable}
	for _, h := range []string{"private.test", "unlisted-1.test", "unlisted-2.test", "10.0.0.1", "gone.test"} {
		_, err := run.DialEgress(t.Context(), h, port)
		if KindOf(err) != want[h] {
			t.Errorf("%s: kind %q (%v), want %q", h, KindOf(err), err, want[h])
		}
	}
	if _, err := run.DialEgress(t.Context(), "ok.test", port); KindOf(err) != KindConnectionCap {
		t.Errorf("past the cap: %v", err)
	}
	for _, c := range run.Stats().Conns {
		if c.Refused != "" && c.Kind != want[c.Host] {
			t.Errorf("record of %s: kind %q", c.Host, c.Kind)
		}
	}
	got := counters.ByHost()
	ok, priv, gone := Rule{"ok.test", port}.String(), Rule{"private.test", port}.String(), Rule{"gone.test", port}.String()
	for k, n := range map[HostOutcome]int64{
		{ok, "opened"}: 1, {priv, KindAddressRefused}: 1, {"other", KindNotAllowed}: 2, {"other", KindInvalidHost}: 1,
		{gone, KindUnreachable}: 1, {"other", KindConnectionCap}: 0, {ok, KindConnectionCap}: 1,
	} {
		if got[k] != n {
			t.Errorf("%+v: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}

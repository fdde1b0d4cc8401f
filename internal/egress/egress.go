// Package egress is the host side of a sandbox's only way out: the operator's
// allow list of hosts and the relay that opens, counts and logs each tunnel an
// install phase asks for through aster-init's CONNECT proxy.
//
// A tunnel is opened only to a host name on the list (exact match, port 443
// unless the rule says otherwise), never to an IP literal; the relay resolves
// the name itself, refuses every address that is not globally reachable
// unicast (the IANA special-purpose registries, special.go), and dials
// the address it checked, so a DNS answer cannot change between the check and
// the connection. Each run has caps on tunnels and bytes.
package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Rule is one allowed destination: a host name and a port (443 by default).
type Rule struct {
	Host string
	Port int
}

func (r Rule) String() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// Resolver looks names up; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Policy is the operator's egress configuration. The zero Policy allows nothing.
// Build it with config.EgressPolicy (which fills the caps from the defaults)
// or by hand in tests.
type Policy struct {
	// Allow lists the destinations tunnels may reach; empty means none.
	Allow []Rule
	// MaxBytes caps the bytes (both directions) of one run's tunnels; 0 = DefaultMaxBytes.
	MaxBytes int64
	// MaxConns caps the tunnels one run may open; 0 = DefaultMaxConns.
	MaxConns int
	// ConnectTimeout bounds resolving and connecting; 0 = DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Addresses admits, for one allow rule, resolved addresses in ranges the
	// relay refuses by default (a registry on a private address): the
	// operator's `addresses` of an egress.allow entry, parsed by
	// ParseAddresses. Link-local and metadata addresses are never admitted,
	// whatever it holds (admit.go).
	Addresses map[Rule][]netip.Prefix
	// Credentials are the hosts whose requests the relay makes itself, with
	// the operator's header added (inject.go); each must be on Allow.
	Credentials []Credential
	// Resolver resolves names; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial, when set, replaces the dial of a checked address. It is for
	// tests of refusals, so that they never reach the network even when the
	// check they test is broken; no configuration file or flag can set it.
	Dial func(ctx context.Context, addr netip.AddrPort) (*net.TCPConn, error)
	// Logger gets one line per tunnel; nil is slog.Default().
	Logger *slog.Logger
	// Counters, when set, counts every run's tunnels (the server's metrics).
	Counters *Counters
}

// The defaults of the caps; internal/config documents them as the defaults of
// egress.max_bytes and egress.max_connections.
const (
	DefaultMaxBytes       = 2 << 30
	DefaultMaxConns       = 256
	DefaultConnectTimeout = 10 * time.Second
)

// Enabled says the policy allows at least one destination.
func (p *Policy) Enabled() bool { return p != nil && len(p.Allow) > 0 }

// Counters are totals over every run of a policy, for metrics.
type Counters struct {
	Opened   atomic.Int64 // tunnels opened
	Refused  atomic.Int64 // tunnels refused (policy, address, cap) or unreachable
	Cut      atomic.Int64 // tunnels cut at the byte cap
	BytesIn  atomic.Int64 // bytes from destinations to sandboxes
	BytesOut atomic.Int64 // bytes from sandboxes to destinations

	mu     sync.Mutex
	byHost map[HostOutcome]int64
}

// HostOutcome is one label pair of the per-host tunnel counts: a host of
// the allow list ("host:port"), or "other" for every name a job asked for
// that is not on it (so that a job cannot grow the metrics' label set), and
// an outcome: "opened", "cut", or a refusal kind.
type HostOutcome struct{ Host, Outcome string }

func (c *Counters) countHost(host, outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byHost == nil {
		c.byHost = map[HostOutcome]int64{}
	}
	c.byHost[HostOutcome{host, outcome}]++
}

// ByHost returns the per-host tunnel counts so far.
func (c *Counters) ByHost() map[HostOutcome]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[HostOutcome]int64, len(c.byHost))
	for k, v := range c.byHost {
		out[k] = v
	}
	return out
}

// hostLabel is the metrics label of host:port: itself when it is on the
// allow list (normalised as the list is), else "other".
func (p *Policy) hostLabel(host string, port int) string {
	name, err := NormalizeHost(host)
	if err != nil {
		return hostLabelOther
	}
	for _, rule := range p.Allow {
		if rule.Host == name && rule.Port == port {
			return rule.String()
		}
	}
	return hostLabelOther
}

// Conn is one tunnel as reported after a run.
type Conn struct {
	Host     string        `json:"host"`
	Port     int           `json:"port"`
	BytesIn  int64         `json:"bytes_in"`
	BytesOut int64         `json:"bytes_out"`
	Duration time.Duration `json:"duration_ns"`
	// Refused is why the tunnel was not opened; empty when it was. Kind
	// is its short class (KindNotAllowed, KindAddressRefused, ...).
	Refused string `json:"refused,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Cut is why an open tunnel was ended by the relay (a cap); empty when
	// it ended by itself.
	Cut string `json:"cut,omitempty"`
	// Credential marks a tunnel to a credentialed host, whose requests the
	// relay made itself (Requests of them).
	Credential bool  `json:"credential,omitempty"`
	Requests   int64 `json:"requests,omitempty"`
}

// Stats is what one run's tunnels did.
type Stats struct {
	Conns   []Conn `json:"conns"`
	Bytes   int64  `json:"bytes"`
	Refused int    `json:"refused"`
	// Dropped counts tunnel attempts past the connection cap that are
	// counted in Refused but not listed in Conns.
	Dropped int `json:"dropped,omitempty"`
}

// Run is one run's relay; it implements sandbox.Dialer.
type Run struct {
	policy *Policy
	id     string
	log    *slog.Logger
	bytes  atomic.Int64

	// ca signs the certificates the relay shows for credentialed hosts
	// (nil without credentials).
	ca *runCA

	mu        sync.Mutex
	attempts  int
	stats     Stats
	ended     bool
	upstreams map[Rule]*http.Transport
	// open are the tunnels not yet closed, which Close ends: nothing
	// reaches an upstream through this run after it (a session's policy
	// switched, a request replayed on a kept tunnel).
	open map[*tunnelConn]struct{}
}

// NewRun returns the relay for one run.
func (p *Policy) NewRun(runID string) *Run {
	r := p.newRun(runID, nil)
	if len(p.Credentials) > 0 {
		ca, err := newRunCA(runID, p.CredentialHosts(), 0)
		if err != nil {
			// Tunnels to credentialed hosts are refused with this reason.
			r.log.Error("egress run CA", "err", err)
		}
		r.ca = ca
	}
	return r
}

// newRun is a relay for one run whose credentialed hosts are shown
// certificates of ca (a session's, which outlives its runs).
func (p *Policy) newRun(runID string, ca *runCA) *Run {
	l := p.Logger
	if l == nil {
		l = slog.Default()
	}
	return &Run{policy: p, id: runID, log: l.With("run", runID), ca: ca}
}

// CredentialHosts are the names of the hosts p sends a credential to.
func (p *Policy) CredentialHosts() []string {
	if p == nil {
		return nil
	}
	var hosts []string
	for _, c := range p.Credentials {
		if !slices.Contains(hosts, c.Rule.Host) {
			hosts = append(hosts, c.Rule.Host)
		}
	}
	return hosts
}

// Refusal is a tunnel the policy does not allow (as opposed to one that could
// not be reached); its text is shown to the job. Kind is its short class
// (KindNotAllowed, ...), for summaries and metrics.
type Refusal struct {
	Reason string
	Kind   string
}

// The kinds of a tunnel that was not opened, as the install summary and the
// metrics name them.
const (
	KindNotAllowed     = "not allowed"
	KindAddressRefused = "private address not admitted for this host"
	KindConnectionCap  = "connection cap"
	KindInvalidHost    = "not a host name"
	KindUnreachable    = "unreachable"
	outcomeOpened      = "opened"
	outcomeCut         = "cut"
	hostLabelOther     = "other"
)

// KindOf is the kind of an error DialEgress returned: a Refusal's, or
// KindUnreachable.
func KindOf(err error) string {
	var r *Refusal
	if errors.As(err, &r) && r.Kind != "" {
		return r.Kind
	}
	return KindUnreachable
}

func (r *Refusal) Error() string { return r.Reason }

// EgressRefused marks the error as a refusal for the sandbox's proxy (403).
func (r *Refusal) EgressRefused() bool { return true }

func refusedf(kind, format string, args ...any) error {
	return &Refusal{Reason: fmt.Sprintf(format, args...), Kind: kind}
}

// DialEgress opens the host side of a tunnel to host:port, or says why not.
func (r *Run) DialEgress(ctx context.Context, host string, port int) (net.Conn, error) {
	start := time.Now()
	r.mu.Lock()
	r.attempts++
	over := r.attempts > r.maxConns()
	ended := r.ended
	r.mu.Unlock()
	if ended {
		err := refusedf(KindRunEnded, "the run has ended: its relay opens no more tunnels")
		r.refused(host, port, err, time.Since(start), false)
		return nil, err
	}
	if over {
		err := refusedf(KindConnectionCap, "connection cap reached: a run may open at most %d tunnels", r.maxConns())
		r.refused(host, port, err, time.Since(start), true)
		return nil, err
	}
	rule, err := r.check(host, port)
	if err != nil {
		r.refused(host, port, err, time.Since(start), false)
		return nil, err
	}
	name := rule.Host
	if cred := r.policy.credential(rule); cred != nil {
		return r.interceptChecked(ctx, rule, cred, start)
	}
	conn, err := r.dial(ctx, rule)
	if err != nil {
		r.refused(name, port, err, time.Since(start), false)
		return nil, err
	}
	tc := &tunnelConn{Conn: conn, run: r, host: name, port: port, start: start}
	if !r.track(tc) {
		_ = conn.Close()
		err := refusedf(KindRunEnded, "the run has ended: its relay opens no more tunnels")
		r.refused(name, port, err, time.Since(start), false)
		return nil, err
	}
	if c := r.policy.Counters; c != nil {
		c.Opened.Add(1)
		c.countHost(r.policy.hostLabel(name, port), outcomeOpened)
	}
	return tc, nil
}

// track adds an open tunnel to those Close ends; false when the run has
// already ended (the caller closes the tunnel).
func (r *Run) track(tc *tunnelConn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	if r.open == nil {
		r.open = map[*tunnelConn]struct{}{}
	}
	r.open[tc] = struct{}{}
	return true
}

func (r *Run) maxConns() int {
	if r.policy.MaxConns > 0 {
		return r.policy.MaxConns
	}
	return DefaultMaxConns
}

func (r *Run) maxBytes() int64 {
	if r.policy.MaxBytes > 0 {
		return r.policy.MaxBytes
	}
	return DefaultMaxBytes
}

// check normalises host and matches it against the allow list.
func (r *Run) check(host string, port int) (Rule, error) {
	name, err := NormalizeHost(host)
	if err != nil {
		return Rule{}, &Refusal{Reason: err.Error(), Kind: KindInvalidHost}
	}
	for _, rule := range r.policy.Allow {
		if rule.Host == name && rule.Port == port {
			return rule, nil
		}
	}
	return Rule{}, refusedf(KindNotAllowed, "%s is not on the operator's egress allow list", net.JoinHostPort(name, strconv.Itoa(port)))
}

// dial resolves name and connects to the first address that passes the
// address check; it dials that address, not the name again. An address in a
// refused range passes only when the operator admitted it for this rule.
func (r *Run) dial(ctx context.Context, rule Rule) (*net.TCPConn, error) {
	name, port := rule.Host, rule.Port
	ctx, cancel := context.WithTimeout(ctx, r.connectTimeout())
	defer cancel()
	ok, err := r.resolve(ctx, rule)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	var last error
	for _, a := range ok {
		if r.policy.Dial != nil {
			c, err := r.policy.Dial(ctx, netip.AddrPortFrom(a, uint16(port)))
			if err == nil {
				return c, nil
			}
			last = err
			continue
		}
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c.(*net.TCPConn), nil
		}
		last = err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("connect %s: timed out", net.JoinHostPort(name, strconv.Itoa(port)))
	}
	var oe *net.OpError
	if errors.As(last, &oe) && oe.Err != nil {
		last = oe.Err
	}
	return nil, fmt.Errorf("connect %s: %v", net.JoinHostPort(name, strconv.Itoa(port)), last)
}

func (r *Run) connectTimeout() time.Duration {
	if r.policy.ConnectTimeout > 0 {
		return r.policy.ConnectTimeout
	}
	return DefaultConnectTimeout
}

// resolve resolves the rule's name and returns the addresses that pass the
// address check, or the refusal.
func (r *Run) resolve(ctx context.Context, rule Rule) ([]netip.Addr, error) {
	name := rule.Host
	var res Resolver = net.DefaultResolver
	if r.policy.Resolver != nil {
		res = r.policy.Resolver
	}
	addrs, err := res.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: the name did not resolve", name)
	}
	var ok []netip.Addr
	var why string
	for _, a := range addrs {
		a = a.Unmap()
		if _, reason, refused := refusedRange(a); refused && !r.policy.admitted(rule, a) {
			why = reason
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		if why == "" {
			why = "no address"
		}
		return nil, refusedf(KindAddressRefused, "%s resolves to a refused address (%s): private address not admitted for this host", name, why)
	}
	return ok, nil
}

// interceptChecked opens an intercepted tunnel to a credentialed host once
// its name resolves to an address the relay may dial, so that a refused
// address is refused at CONNECT as for any host.
func (r *Run) interceptChecked(ctx context.Context, rule Rule, cred *Credential, start time.Time) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, r.connectTimeout())
	defer cancel()
	if _, err := r.resolve(ctx, rule); err != nil {
		r.refused(rule.Host, rule.Port, err, time.Since(start), false)
		return nil, err
	}
	if r.ca == nil {
		err := fmt.Errorf("%s: the run's certificate authority could not be made", rule)
		r.refused(rule.Host, rule.Port, err, time.Since(start), false)
		return nil, err
	}
	conn, err := r.intercept(rule, cred, start)
	if err != nil {
		r.refused(rule.Host, rule.Port, err, time.Since(start), false)
		return nil, err
	}
	if c := r.policy.Counters; c != nil {
		c.Opened.Add(1)
		c.countHost(r.policy.hostLabel(rule.Host, rule.Port), outcomeOpened)
	}
	return conn, nil
}

// refused records and logs a tunnel that was not opened. Past the cap only
// the count grows, so a job that loops on connect costs no memory and no log.
func (r *Run) refused(host string, port int, err error, d time.Duration, overCap bool) {
	if c := r.policy.Counters; c != nil {
		c.Refused.Add(1)
		c.countHost(r.policy.hostLabel(host, port), KindOf(err))
	}
	r.mu.Lock()
	r.stats.Refused++
	first := true
	if overCap {
		first = r.stats.Dropped == 0
		r.stats.Dropped++
	} else {
		r.stats.Conns = append(r.stats.Conns, Conn{Host: host, Port: port, Duration: d, Refused: err.Error(), Kind: KindOf(err)})
	}
	r.mu.Unlock()
	if first {
		r.log.Warn("egress tunnel refused", "host", host, "port", port, "reason", err.Error(), "duration", d)
	}
}

// finished records and logs a tunnel that was open.
func (r *Run) finished(c Conn) {
	if k := r.policy.Counters; k != nil {
		k.BytesIn.Add(c.BytesIn)
		k.BytesOut.Add(c.BytesOut)
		if c.Cut != "" {
			k.Cut.Add(1)
			k.countHost(r.policy.hostLabel(c.Host, c.Port), outcomeCut)
		}
	}
	r.mu.Lock()
	r.stats.Conns = append(r.stats.Conns, c)
	r.mu.Unlock()
	args := []any{"host", c.Host, "port", c.Port, "bytes_in", c.BytesIn, "bytes_out", c.BytesOut, "duration", c.Duration}
	if c.Cut != "" {
		r.log.Warn("egress tunnel cut", append(args, "reason", c.Cut)...)
		return
	}
	r.log.Info("egress tunnel", args...)
}

// Stats returns a copy of what the run's tunnels did so far. Tunnels still
// open are not in it; the sandbox's Session closes every tunnel before a run
// returns.
func (r *Run) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Conns = append([]Conn(nil), s.Conns...)
	s.Bytes = r.bytes.Load()
	return s
}

// tunnelConn counts a tunnel's bytes against the run's cap and records the
// tunnel when it is closed.
type tunnelConn struct {
	net.Conn
	run   *Run
	host  string
	port  int
	start time.Time
	// requests counts the requests of an intercepted tunnel; onClose ends
	// its relay side (both nil for a plain one).
	requests *atomic.Int64
	onClose  func()

	in, out atomic.Int64
	cut     atomic.Pointer[string]
	once    sync.Once
}

// ErrByteCap ends a tunnel whose run passed its byte cap.
var ErrByteCap = errors.New("egress byte cap reached")

func (c *tunnelConn) count(n int, dir *atomic.Int64) error {
	if n <= 0 {
		return nil
	}
	dir.Add(int64(n))
	if total := c.run.bytes.Add(int64(n)); total > c.run.maxBytes() {
		return c.cutNow()
	}
	return nil
}

// cutNow ends the tunnel at the byte cap and records why.
func (c *tunnelConn) cutNow() error {
	reason := fmt.Sprintf("the run passed its egress cap of %d bytes", c.run.maxBytes())
	c.cut.CompareAndSwap(nil, &reason)
	_ = c.Conn.Close()
	return ErrByteCap
}

func (c *tunnelConn) Read(b []byte) (int, error) {
	if c.run.bytes.Load() >= c.run.maxBytes() {
		return 0, c.cutNow()
	}
	n, err := c.Conn.Read(b)
	if cerr := c.count(n, &c.in); cerr != nil {
		return 0, cerr
	}
	return n, err
}

func (c *tunnelConn) Write(b []byte) (int, error) {
	if err := c.count(len(b), &c.out); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

func (c *tunnelConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.run.mu.Lock()
		delete(c.run.open, c)
		c.run.mu.Unlock()
		if c.onClose != nil {
			c.onClose()
		}
		conn := Conn{Host: c.host, Port: c.port, BytesIn: c.in.Load(), BytesOut: c.out.Load(), Duration: time.Since(c.start)}
		if c.requests != nil {
			conn.Requests = c.requests.Load()
			conn.Credential = true
		}
		if p := c.cut.Load(); p != nil {
			conn.Cut = *p
		}
		c.run.finished(conn)
	})
	return err
}

// NormalizeHost checks a host name a job asked for and returns it in the form
// rules are compared in: lower case, without a trailing dot. IP literals in
// every spelling a resolver might accept (dotted, bracketed IPv6, a single
// decimal or hex number, octal parts) are refused: only names reach the list.
func NormalizeHost(host string) (string, error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if strings.HasPrefix(h, "[") || strings.Contains(h, ":") {
		return "", errors.New("IP literals are not allowed: ask for a host name")
	}
	if h == "" || len(h) > 253 {
		return "", errors.New("the host name is empty or too long")
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return "", errors.New("IP literals are not allowed: ask for a host name")
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("%q is not a valid host name", h)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("%q is not a valid host name", h)
			}
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("%q is not a valid host name", h)
		}
	}
	// A name whose last label is a number (2130706433, 127.1, 0x7f.1,
	// 0177.0.0.1) is an address to inet_aton, and no top-level domain is
	// numeric.
	if numeric(labels[len(labels)-1]) {
		return "", errors.New("IP literals are not allowed (numeric host name): ask for a host name")
	}
	return h, nil
}

func numeric(l string) bool {
	if strings.HasPrefix(l, "0x") {
		l = l[2:]
		for i := 0; i < len(l); i++ {
			if !strings.ContainsRune("0123456789abcdef", rune(l[i])) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// ParseRule reads one "host[:port]" allow entry of the operator's
// configuration. The port defaults to 443; the host must be a name (not an
// address) and is normalised like the names jobs ask for.
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	host, port := s, 443
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.HasSuffix(s, "]") {
		h, ps := s[:i], s[i+1:]
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 || ps[0] == '+' {
			return Rule{}, fmt.Errorf("egress allow entry %q: bad port %q", s, ps)
		}
		host, port = h, n
	}
	name, err := NormalizeHost(host)
	if err != nil {
		return Rule{}, fmt.Errorf("egress allow entry %q: %v", s, err)
	}
	return Rule{Host: name, Port: port}, nil
}

// ParseAllow reads a list of "host[:port]" entries; duplicates are dropped.
func ParseAllow(entries []string) ([]Rule, error) {
	var out []Rule
	seen := map[Rule]bool{}
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, err
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}

package egress

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Credential injection (egress.credentials). For a host with a credential
// the relay does not pass the sandbox's TLS through: it terminates it with a
// certificate from the run's own CA (generated here, its key never leaves
// this process), removes every credential header the job sent, adds the
// operator's header, and sends the request over its own TLS connection to
// the upstream, verified against the credential's roots. The secret exists
// only in this process: the job sees the CA's certificate and the upstream's
// answers, nothing else.

// Credential is one egress.credentials entry: the header the relay adds to
// every request to Rule's host. Value is the secret; nothing logs it.
type Credential struct {
	Rule   Rule
	Header string // canonical form, checked by CheckHeaderName
	Value  string
	// RootCAs verifies the upstream; nil is the system roots.
	RootCAs *x509.CertPool
}

// KindCredentialRejected is the kind of a request through a credentialed
// host that the upstream answered 401 or 403: the operator's credential is
// wrong, expired or lacks a permission.
const KindCredentialRejected = "credential rejected upstream"

// KindRunEnded is the kind of a tunnel asked for after its run ended.
const KindRunEnded = "run ended"

// strippedHeaders are the credential headers a job's request loses before
// the operator's header is added (cookies too: a session cookie is a
// credential).
var strippedHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// refusedHeaderNames may not carry a credential: they frame the request.
var refusedHeaderNames = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Upgrade": true,
	"Keep-Alive": true, "Te": true, "Trailer": true, "Proxy-Connection": true, "Expect": true, "Content-Type": true,
}

// CheckHeaderName checks the header name of a credential and returns it in
// canonical form.
func CheckHeaderName(name string) (string, error) {
	if name == "" || len(name) > 64 {
		return "", errors.New("the header name is empty or longer than 64 bytes")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return "", fmt.Errorf("header name %q: only letters, digits and '-'", name)
		}
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	if refusedHeaderNames[canon] {
		return "", fmt.Errorf("header name %q frames the request and cannot carry a credential", name)
	}
	return canon, nil
}

// CheckHeaderValue checks a credential's value: printable ASCII and spaces,
// no line breaks (which would add headers of the job's choosing), at most
// 8 KiB. It never quotes the value.
func CheckHeaderValue(v string) error {
	if v == "" {
		return errors.New("the value is empty")
	}
	if len(v) > 8<<10 {
		return errors.New("the value is longer than 8 KiB")
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return fmt.Errorf("the value holds a control character at byte %d (a line break?)", i)
		}
	}
	return nil
}

// credential is the rule's credential, or nil.
func (p *Policy) credential(rule Rule) *Credential {
	for i := range p.Credentials {
		if p.Credentials[i].Rule == rule {
			return &p.Credentials[i]
		}
	}
	return nil
}

// runCA is one run's certificate authority: it signs only the names of
// the credentialed hosts (a name constraint), for the run's lifetime.
type runCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// caLifetime bounds the run CA's certificates; a run ends long before.
const caLifetime = 24 * time.Hour

// newRunCA makes a CA that may sign the names hosts only, valid for
// lifetime (caLifetime when zero).
func newRunCA(runID string, hosts []string, lifetime time.Duration) (*runCA, error) {
	if lifetime <= 0 {
		lifetime = caLifetime
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("run CA key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Aster egress relay, run " + printableID(runID)},
		NotBefore:    now.Add(-time.Minute), NotAfter: now.Add(lifetime),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage:                    x509.KeyUsageCertSign,
		PermittedDNSDomainsCritical: true, PermittedDNSDomains: hosts,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("run CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &runCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), leaves: map[string]*tls.Certificate{}}, nil
}

func printableID(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}

// leaf is the certificate the relay shows the job for host.
func (ca *runCA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c := ca.leaves[host]; c != nil {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: ca.cert.NotBefore, NotAfter: ca.cert.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("leaf certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
	ca.leaves[host] = c
	return c, nil
}

// CACertPEM is the certificate of the run's CA, which a job must trust to
// reach a credentialed host (nil when the policy has no credential). Only
// the certificate: its key stays in this process.
func (r *Run) CACertPEM() []byte {
	if r.ca == nil {
		return nil
	}
	return append([]byte(nil), r.ca.certPEM...)
}

// Close ends the run: every later tunnel is refused, every tunnel still
// open is closed (a request the job sends on one later reaches nothing),
// and so are the upstream connections of credentialed hosts.
func (r *Run) Close() {
	r.mu.Lock()
	r.ended = true
	ups := r.upstreams
	r.upstreams = nil
	open := make([]*tunnelConn, 0, len(r.open))
	for c := range r.open {
		open = append(open, c)
	}
	r.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
	for _, u := range ups {
		u.CloseIdleConnections()
	}
}

// isEnded says Close was called.
func (r *Run) isEnded() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended
}

// upstream is the transport to a credentialed host for one run: its own
// TLS connections, dialled through the run's address checks, kept alive
// across the job's tunnels.
func (r *Run) upstream(rule Rule, cred *Credential) *http.Transport {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.upstreams[rule]; t != nil {
		return t
	}
	t := &http.Transport{
		Proxy: nil,
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := r.dial(ctx, rule)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(c, &tls.Config{ServerName: rule.Host, RootCAs: cred.RootCAs, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, fmt.Errorf("TLS to %s: %w", rule, err)
			}
			return tc, nil
		},
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 only
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       60 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		DisableCompression:    true,
	}
	if r.upstreams == nil {
		r.upstreams = map[Rule]*http.Transport{}
	}
	r.upstreams[rule] = t
	return t
}

// intercept serves one tunnel to a credentialed host: the returned conn is
// the job's end; the relay's end is a TLS server whose requests go upstream
// with the credential.
func (r *Run) intercept(rule Rule, cred *Credential, start time.Time) (*tunnelConn, error) {
	cert, err := r.ca.leaf(rule.Host)
	if err != nil {
		return nil, err
	}
	jobEnd, relayEnd := net.Pipe()
	srvTLS := tls.Server(relayEnd, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" && !strings.EqualFold(strings.TrimSuffix(hello.ServerName, "."), rule.Host) {
				return nil, fmt.Errorf("TLS server name %q is not %s", hello.ServerName, rule.Host)
			}
			return cert, nil
		},
	})
	h := &injector{run: r, rule: rule, cred: cred, transport: r.upstream(rule, cred)}
	h.proxy = &httputil.ReverseProxy{
		Rewrite:        h.rewrite,
		Transport:      h.transport,
		ModifyResponse: h.response,
		ErrorHandler:   h.failed,
		ErrorLog:       log.New(io.Discard, "", 0),
		FlushInterval:  -1,
	}
	ln := &oneConnListener{conn: srvTLS, done: make(chan struct{})}
	srv := &http.Server{
		Handler: h, ReadHeaderTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog:     log.New(io.Discard, "", 0),
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				ln.Close()
			}
		},
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	tc := &tunnelConn{Conn: jobEnd, run: r, host: rule.Host, port: rule.Port, start: start, requests: &h.requests}
	tc.onClose = func() {
		_ = srv.Close()
		<-served
		h.wg.Wait()
	}
	if !r.track(tc) {
		_ = jobEnd.Close()
		tc.onClose()
		return nil, refusedf(KindRunEnded, "the run has ended: its relay opens no more tunnels")
	}
	return tc, nil
}

// injector is the HTTP side of one intercepted tunnel.
type injector struct {
	run       *Run
	rule      Rule
	cred      *Credential
	transport *http.Transport
	proxy     *httputil.ReverseProxy
	wg        sync.WaitGroup
	requests  atomic.Int64
}

// ServeHTTP refuses what must not go upstream (another host, a protocol
// upgrade) and proxies the rest.
func (h *injector) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h.wg.Add(1)
	defer h.wg.Done()
	h.requests.Add(1)
	if h.run.isEnded() {
		// Close is ending this tunnel; nothing more goes upstream.
		h.logRequest(req, http.StatusForbidden, KindRunEnded)
		w.Header().Set("Connection", "close")
		http.Error(w, "aster egress: the run has ended", http.StatusForbidden)
		return
	}
	if !h.sameHost(req.Host) {
		h.logRequest(req, http.StatusMisdirectedRequest, "the request names another host than its tunnel")
		http.Error(w, "aster egress: this connection serves "+h.rule.String()+" only", http.StatusMisdirectedRequest)
		return
	}
	if req.Header.Get("Upgrade") != "" || req.Method == http.MethodConnect {
		h.logRequest(req, http.StatusNotImplemented, "protocol upgrades are not relayed to a credentialed host")
		http.Error(w, "aster egress: no protocol upgrade or CONNECT through a credentialed host", http.StatusNotImplemented)
		return
	}
	h.proxy.ServeHTTP(w, req)
}

// sameHost says the request's Host is the tunnel's host and port.
func (h *injector) sameHost(hostport string) bool {
	host, port := hostport, ""
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		host, port = hostport[:i], hostport[i+1:]
	}
	name, err := NormalizeHost(host)
	if err != nil || name != h.rule.Host {
		return false
	}
	if port == "" {
		return h.rule.Port == 443
	}
	n, err := strconv.Atoi(port)
	return err == nil && n == h.rule.Port
}

func (h *injector) rewrite(pr *httputil.ProxyRequest) {
	out := pr.Out
	out.URL.Scheme = "https"
	out.URL.Host = h.rule.String()
	if h.rule.Port == 443 {
		out.URL.Host = h.rule.Host
	}
	out.Host = out.URL.Host
	for _, k := range strippedHeaders {
		out.Header.Del(k)
	}
	out.Header.Del(h.cred.Header)
	out.Header.Set(h.cred.Header, h.cred.Value)
}

func (h *injector) response(resp *http.Response) error {
	resp.Header.Del("Set-Cookie")
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		h.run.rejected(h.rule, resp.StatusCode, resp.Request)
	}
	h.logRequest(resp.Request, resp.StatusCode, "")
	return nil
}

func (h *injector) failed(w http.ResponseWriter, req *http.Request, err error) {
	reason := "upstream unreachable"
	var ref *Refusal
	if errors.As(err, &ref) {
		reason = ref.Reason
	}
	if req.Context().Err() == nil {
		h.logRequest(req, http.StatusBadGateway, reason)
	}
	http.Error(w, "aster egress: "+reason, http.StatusBadGateway)
}

// logRequest logs a request by method, host, path and status: never its
// query string or headers.
func (h *injector) logRequest(req *http.Request, status int, reason string) {
	args := []any{"host", h.rule.Host, "port", h.rule.Port, "method", printableID(req.Method), "path", requestPath(req), "status", status}
	if reason != "" {
		args = append(args, "reason", reason)
	}
	h.run.log.Info("egress request with credential", args...)
}

// maxLoggedPath bounds the path a log line or report quotes.
const maxLoggedPath = 200

// requestPath is the request's path without its query, printable, bounded.
func requestPath(req *http.Request) string {
	p := req.URL.EscapedPath()
	if len(p) > maxLoggedPath {
		p = p[:maxLoggedPath] + "..."
	}
	return printableID(p)
}

// rejected records a request the upstream refused the credential for.
func (r *Run) rejected(rule Rule, status int, req *http.Request) {
	reason := fmt.Sprintf("%s: %d", KindCredentialRejected, status)
	if c := r.policy.Counters; c != nil {
		c.countHost(rule.String(), KindCredentialRejected)
	}
	r.mu.Lock()
	r.stats.Refused++
	r.stats.Conns = append(r.stats.Conns, Conn{Host: rule.Host, Port: rule.Port, Refused: reason, Kind: KindCredentialRejected})
	r.mu.Unlock()
	r.log.Warn("egress credential rejected upstream", "host", rule.Host, "port", rule.Port, "status", status,
		"method", printableID(req.Method), "path", requestPath(req))
}

// oneConnListener hands out one connection, then blocks until closed.
type oneConnListener struct {
	mu   sync.Mutex
	conn net.Conn
	done chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "aster-egress" }

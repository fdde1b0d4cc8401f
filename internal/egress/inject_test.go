package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const testSecret = "Bearer aster-test-secret-7f3c9e"

// authServer is an HTTPS upstream on loopback that wants testSecret in
// Authorization (401 otherwise) and records what each request carried.
type authServer struct {
	srv   *httptest.Server
	port  int
	pool  *x509.CertPool
	caPEM []byte

	mu    sync.Mutex
	seen  []http.Header
	conns int
}

func newAuthServer(t *testing.T) *authServer {
	t.Helper()
	a := &authServer{}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, req.Header.Clone())
		a.mu.Unlock()
		if req.Header.Get("Authorization") != testSecret {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "derived-from-the-credential"})
		io.WriteString(w, "private:"+req.URL.Path)
	}))
	a.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			a.mu.Lock()
			a.conns++
			a.mu.Unlock()
		}
	}
	caPEM, leaf := testCA(t, "reg.test", "alias.test")
	a.srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	a.srv.StartTLS()
	t.Cleanup(a.srv.Close)
	a.port = a.srv.Listener.Addr().(*net.TCPAddr).Port
	a.pool = x509.NewCertPool()
	a.pool.AppendCertsFromPEM(caPEM)
	a.caPEM = caPEM
	return a
}

func (a *authServer) headers() []http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]http.Header(nil), a.seen...)
}

// credPolicy allows reg.test and alias.test (both resolving to the
// server's loopback address) and gives reg.test the credential value.
func credPolicy(a *authServer, value string, logs io.Writer) (*Policy, Rule) {
	rule := Rule{"reg.test", a.port}
	alias := Rule{"alias.test", a.port}
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	p := &Policy{
		Allow:       []Rule{rule, alias},
		Addresses:   loopbackAdmitted(rule, alias),
		Resolver:    resolver{"reg.test": lo, "alias.test": lo},
		Credentials: []Credential{{Rule: rule, Header: "Authorization", Value: value, RootCAs: a.pool}},
		Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Counters:    &Counters{},
	}
	return p, rule
}

// jobClient is what a job's HTTP client does through the proxy: a tunnel
// per connection from DialEgress, TLS trusting only the run's CA.
func jobClient(t *testing.T, run *Run, serverName string) *http.Client {
	t.Helper()
	return dialerClient(t, run, serverName, run.CACertPEM())
}

// dialerClient is jobClient through any relay d, trusting the certificates
// of trust only.
func dialerClient(t *testing.T, d interface {
	DialEgress(context.Context, string, int) (net.Conn, error)
}, serverName string, trust ...[]byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	for _, pem := range trust {
		if !pool.AppendCertsFromPEM(pem) {
			t.Fatal("a CA certificate the job trusts does not parse")
		}
	}
	tr := &http.Transport{
		DialTLSContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			p, _ := strconv.Atoi(port)
			c, err := d.DialEgress(ctx, host, p)
			if err != nil {
				return nil, err
			}
			name := host
			if serverName != "" {
				name = serverName
			}
			tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: name})
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return tc, nil
		},
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, url string, hdr http.Header) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// The relay adds the operator's credential, drops the job's own credential
// headers and cookies, keeps one tunnel alive across requests, and logs
// method, host, path and status only.
func TestInjectCredential(t *testing.T) {
	a := newAuthServer(t)
	var logs bytes.Buffer
	p, rule := credPolicy(a, testSecret, &logs)
	run := p.NewRun("inject")
	c := jobClient(t, run, "")
	base := "https://reg.test:" + strconv.Itoa(a.port)
	hdr := http.Header{"Authorization": {"Bearer stolen-by-the-job"}, "Cookie": {"a=b"}, "Proxy-Authorization": {"Basic eDp5"}}
	for i, path := range []string{"/@scope%2fpkg", "/-/tarball.tgz", "/third"} {
		status, body, h := get(t, c, base+path+"?token=in-the-query", hdr)
		if status != http.StatusOK || !strings.HasPrefix(body, "private:") {
			t.Fatalf("request %d: %d %q", i, status, body)
		}
		if h.Get("Set-Cookie") != "" {
			t.Errorf("request %d: a cookie reached the job", i)
		}
	}
	for i, h := range a.headers() {
		if got := h.Values("Authorization"); len(got) != 1 || got[0] != testSecret {
			t.Errorf("upstream request %d: Authorization %q", i, got)
		}
		if h.Get("Cookie") != "" || h.Get("Proxy-Authorization") != "" {
			t.Errorf("upstream request %d kept the job's headers: %v", i, h)
		}
	}
	c.CloseIdleConnections()
	run.Close()
	st := run.Stats()
	if len(st.Conns) != 1 || !st.Conns[0].Credential || st.Conns[0].Requests != 3 || st.Refused != 0 || st.Conns[0].Host != rule.Host {
		t.Fatalf("stats %+v, want one tunnel with 3 requests (keep-alive)", st)
	}
	a.mu.Lock()
	conns := a.conns
	a.mu.Unlock()
	if conns != 1 {
		t.Errorf("the upstream saw %d connections, want 1 (keep-alive)", conns)
	}
	out := logs.String()
	for _, leak := range []string{"aster-test-secret", "in-the-query", "stolen-by-the-job", "eDp5"} {
		if strings.Contains(out, leak) {
			t.Errorf("the log holds %q:\n%s", leak, out)
		}
	}
	if !strings.Contains(out, "path=/-/tarball.tgz") || !strings.Contains(out, "status=200") || !strings.Contains(out, "method=GET") {
		t.Errorf("the log lacks method, path or status:\n%s", out)
	}
	if bytes.Contains(run.CACertPEM(), []byte("PRIVATE KEY")) {
		t.Error("the CA certificate the job gets holds a key")
	}
}

// A wrong credential is reported as rejected upstream, with the status.
func TestInjectCredentialRejected(t *testing.T) {
	a := newAuthServer(t)
	p, rule := credPolicy(a, "Bearer wrong", io.Discard)
	run := p.NewRun("rejected")
	c := jobClient(t, run, "")
	if status, _, _ := get(t, c, "https://reg.test:"+strconv.Itoa(a.port)+"/x", nil); status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", status)
	}
	c.CloseIdleConnections()
	st := run.Stats()
	var found bool
	for _, cn := range st.Conns {
		if cn.Kind == KindCredentialRejected && cn.Refused == "credential rejected upstream: 401" && cn.Host == rule.Host {
			found = true
		}
	}
	if !found || st.Refused != 1 {
		t.Fatalf("stats %+v, want the rejection recorded", st)
	}
	if n := p.Counters.ByHost()[HostOutcome{rule.String(), KindCredentialRejected}]; n != 1 {
		t.Fatalf("rejections counted %d", n)
	}
}

// What a job might try instead: another name for the same server gets no
// credential; a request naming another host, or TLS for another name,
// through the credentialed tunnel goes nowhere; an address literal is
// refused; the run's CA cannot vouch for another name; after the run ended
// nothing opens.
func TestInjectHostile(t *testing.T) {
	a := newAuthServer(t)
	p, rule := credPolicy(a, testSecret, io.Discard)
	run := p.NewRun("hostile")

	// alias.test is allowed, resolves to the same server, has no credential:
	// a plain tunnel, so the job's TLS meets the server's own certificate,
	// which the job does not trust through the run's CA.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(run.CACertPEM())
	conn, err := run.DialEgress(t.Context(), "alias.test", a.port)
	if err != nil {
		t.Fatal(err)
	}
	if err := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: "alias.test"}).HandshakeContext(t.Context()); err == nil {
		t.Error("the run's CA vouched for alias.test")
	}
	conn.Close()
	// Verifying the upstream's own certificate instead, the job reaches it
	// without any credential.
	conn, _ = run.DialEgress(t.Context(), "alias.test", a.port)
	tc := tls.Client(conn, &tls.Config{RootCAs: a.pool, ServerName: "alias.test"})
	req, _ := http.NewRequest(http.MethodGet, "https://alias.test/x", nil)
	if err := req.Write(tc); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 12)
	io.ReadFull(tc, b)
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 401")) {
		t.Errorf("alias: %q, want the upstream's 401", b)
	}
	conn.Close()

	// TLS for another name through the credentialed tunnel.
	conn, err = run.DialEgress(t.Context(), rule.Host, rule.Port)
	if err != nil {
		t.Fatal(err)
	}
	if err := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: "alias.test"}).HandshakeContext(t.Context()); err == nil {
		t.Error("TLS for alias.test through reg.test's tunnel")
	}
	conn.Close()

	// A request naming another host through the credentialed tunnel.
	before := len(a.headers())
	c := jobClient(t, run, "")
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, "https://reg.test:"+strconv.Itoa(a.port)+"/x", nil)
	req.Host = "alias.test:" + strconv.Itoa(a.port)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || len(a.headers()) != before {
		t.Errorf("another Host through the tunnel: %d, upstream requests %d -> %d", resp.StatusCode, before, len(a.headers()))
	}
	c.CloseIdleConnections()

	// Address literals never match a rule.
	for _, h := range []string{"127.0.0.1", "[::1]", "2130706433"} {
		if _, err := run.DialEgress(t.Context(), h, a.port); KindOf(err) != KindInvalidHost {
			t.Errorf("%s: %v", h, err)
		}
	}
	// The run's CA may sign only the credentialed names.
	if _, err := run.ca.leaf("alias.test"); err == nil {
		leaf, _ := run.ca.leaf("alias.test")
		cert, _ := x509.ParseCertificate(leaf.Certificate[0])
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "alias.test"}); err == nil {
			t.Error("a certificate of the run's CA for another name verifies")
		}
	}

	run.Close()
	if _, err := run.DialEgress(t.Context(), rule.Host, rule.Port); KindOf(err) != KindRunEnded {
		t.Fatalf("after the run: %v", err)
	}
	var r *Refusal
	if _, err := run.DialEgress(t.Context(), rule.Host, rule.Port); !errors.As(err, &r) {
		t.Fatalf("after the run: %v, want a refusal", err)
	}
}

func TestCheckHeader(t *testing.T) {
	for in, want := range map[string]string{"authorization": "Authorization", "X-JFrog-Art-Api": "X-Jfrog-Art-Api", "private-token": "Private-Token"} {
		if got, err := CheckHeaderName(in); err != nil || got != want {
			t.Errorf("CheckHeaderName(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "Host", "content-length", "Transfer-Encoding", "X Y", "X:Y", "X\nY", strings.Repeat("x", 65), "Connection"} {
		if _, err := CheckHeaderName(in); err == nil {
			t.Errorf("CheckHeaderName(%q) accepted", in)
		}
	}
	if err := CheckHeaderValue("Bearer abc.def"); err != nil {
		t.Error(err)
	}
	for _, in := range []string{"", "a\r\nX-Evil: 1", "a\nb", "a\x00", strings.Repeat("x", 9<<10)} {
		if err := CheckHeaderValue(in); err == nil {
			t.Errorf("CheckHeaderValue(%q) accepted", in)
		} else if strings.Contains(err.Error(), in) && in != "" {
			t.Errorf("the error quotes the value: %v", err)
		}
	}
}

// testCA is a CA (its PEM certificate) and a leaf it signed for names.
func testCA(t *testing.T, names ...string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "upstream test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Replay after the run ended: the job keeps its tunnel to the credentialed
// host open and sends again after Run.Close — the tunnel is gone and the
// upstream sees nothing; a new tunnel is refused as "run ended"; what the
// job could capture (its own request, which never held the credential)
// replayed straight to the upstream gets the upstream's 401.
func TestInjectReplayAfterRunEnded(t *testing.T) {
	a := newAuthServer(t)
	p, rule := credPolicy(a, testSecret, io.Discard)
	run := p.NewRun("replay")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(run.CACertPEM())
	conn, err := run.DialEgress(t.Context(), rule.Host, rule.Port)
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: rule.Host})
	captured := "GET /private HTTP/1.1\r\nHost: " + rule.String() + "\r\nAuthorization: Bearer job-own\r\n\r\n"
	br := bufioReader(tc)
	send := func() (int, error) {
		if _, err := io.WriteString(tc, captured); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if status, err := send(); err != nil || status != http.StatusOK {
		t.Fatalf("during the run: %d %v", status, err)
	}
	before := len(a.headers())
	run.Close()
	if status, err := send(); err == nil {
		t.Errorf("a request on the kept tunnel after the run got %d", status)
	}
	if n := len(a.headers()); n != before {
		t.Errorf("the upstream saw %d requests after the run", n-before)
	}
	if _, err := run.DialEgress(t.Context(), rule.Host, rule.Port); KindOf(err) != KindRunEnded {
		t.Fatalf("a new tunnel after the run: %v", err)
	}
	st := run.Stats()
	if len(st.Conns) < 2 || !st.Conns[0].Credential || st.Conns[0].Requests != 1 {
		t.Errorf("stats %+v, want the closed tunnel (1 request) and the refusal", st)
	}
	// Straight to the upstream, the captured request is the job's own.
	direct, err := tls.Dial("tcp", a.srv.Listener.Addr().String(), &tls.Config{RootCAs: a.pool, ServerName: rule.Host})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	io.WriteString(direct, captured)
	resp, err := http.ReadResponse(bufioReader(direct), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the captured request replayed to the upstream: %d, want 401", resp.StatusCode)
	}
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }

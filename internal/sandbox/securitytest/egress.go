package securitytest

import (
	"archive/tar"
	"bytes"
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
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
)

// registry is an HTTPS server on the host's loopback standing in for a
// package registry: a certificate for "localhost" from a CA the job gets in
// its workspace, and a count of the requests and connections it saw.
type registry struct {
	srv      *httptest.Server
	port     int
	caPEM    []byte
	requests atomic.Int64
	conns    atomic.Int64
}

func newRegistry(t testing.TB) *registry {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "aster egress test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	r := &registry{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		switch req.URL.Path {
		case "/hello":
			fmt.Fprint(w, "hello through the relay")
		case "/whoami":
			// What a credentialed request carried (N11): never the values.
			auth := "missing"
			switch got := req.Header.Values("Authorization"); {
			case len(got) == 1 && got[0] == credentialValue:
				auth = "operator"
			case len(got) > 0:
				auth = "other"
			}
			fmt.Fprintf(w, "auth=%s,cookie=%t,proxyauth=%t", auth, req.Header.Get("Cookie") != "", req.Header.Get("Proxy-Authorization") != "")
		case "/big":
			n, _ := strconv.Atoi(req.URL.Query().Get("n"))
			chunk := []byte(strings.Repeat("x", 64<<10))
			for sent := 0; sent < n; sent += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, req)
		}
	}))
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}
	r.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			r.conns.Add(1)
		}
	}
	r.srv.StartTLS() // on 127.0.0.1
	t.Cleanup(r.srv.Close)
	r.port = r.srv.Listener.Addr().(*net.TCPAddr).Port
	return r
}

// policy allows the registry by name and admits its address, the host's
// 127.0.0.1 and nothing else the relay refuses, as an operator's
// `{host: localhost, port: PORT, addresses: [127.0.0.1/32]}` does.
func (r *registry) policy() *egress.Policy {
	rule := egress.Rule{Host: "localhost", Port: r.port}
	return &egress.Policy{Allow: []egress.Rule{rule}, Addresses: map[egress.Rule][]netip.Prefix{rule: {netip.MustParsePrefix("127.0.0.1/32")}}}
}

// egressSpec is a Python job with the relay as its proxy and the registry's
// CA in its workspace.
func (r *registry) spec(prog string, d sandbox.Dialer) sandbox.Spec {
	return sandbox.Spec{
		Argv:      []string{"python3", "-c", prog},
		Env:       map[string]string{"HTTPS_PROXY": "http://127.0.0.1:" + strconv.Itoa(sandbox.EgressProxyPort), "REG_PORT": strconv.Itoa(r.port)},
		Workspace: sandbox.Workspace{Files: map[string][]byte{"ca.pem": r.caPEM}},
		Limits:    sandbox.Limits{TimeoutMS: 60000},
		Egress:    d,
	}
}

// rawConnect is a Python helper: send one proxy request line to init's proxy
// and print name=<status code> (or the error).
const rawConnect = `
import socket, os
PORT = int(os.environ["REG_PORT"])
def ask(name, line):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
    try:
        s.sendall(line.encode() + b"\r\nHost: x\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            b = s.recv(4096)
            if not b:
                break
            data += b
        print("%s=%s" % (name, data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "closed"))
    except OSError as e:
        print("%s=%s" % (name, type(e).__name__))
    finally:
        s.close()
`

// N1: an allowed host is reached through the relay, HTTPS verified end to
// end; the tunnel is in the run's statistics with its bytes.
func (s *suite) n1RelayAllowed(t *testing.T) {
	reg := newRegistry(t)
	pol := reg.policy()
	run := pol.NewRun(t.Name())
	res := s.run(t, reg.spec(`
import os, ssl, urllib.request
ctx = ssl.create_default_context(cafile="ca.pem")
body = urllib.request.urlopen("https://localhost:%s/hello" % os.environ["REG_PORT"], context=ctx, timeout=30).read()
print("body=" + body.decode())
`, run))
	wantStatus(t, res, sandbox.StatusOK)
	if got := kv(res)["body"]; got != "hello through the relay" {
		t.Fatalf("body %q; result %s", got, short(res))
	}
	st := run.Stats()
	if len(st.Conns) != 1 || st.Refused != 0 {
		t.Fatalf("stats %+v, want one open tunnel", st)
	}
	c := st.Conns[0]
	if c.Host != "localhost" || c.Port != reg.port || c.BytesIn < 100 || c.BytesOut < 100 || c.Refused != "" || c.Cut != "" || c.Duration <= 0 {
		t.Fatalf("tunnel %+v", c)
	}
	if st.Bytes != c.BytesIn+c.BytesOut {
		t.Fatalf("run bytes %d, tunnel %d+%d", st.Bytes, c.BytesIn, c.BytesOut)
	}
}

// N2: everything but an allowed name is refused with a reason: a host not on
// the list, the allowed host on another port, IP literals in every spelling,
// a name that resolves to loopback; plain HTTP is refused; DNS fails inside;
// the host's addresses are unreachable directly. Nothing reaches the server.
func (s *suite) n2RelayRefusals(t *testing.T) {
	reg := newRegistry(t)
	// No addresses: "localhost" is allowed by name but resolves to loopback.
	pol := &egress.Policy{Allow: []egress.Rule{{Host: "localhost", Port: reg.port}, {Host: "aster-not-resolvable.invalid", Port: 443}}}
	run := pol.NewRun(t.Name())
	var hostAddrs []string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				hostAddrs = append(hostAddrs, ipn.IP.String())
			}
		}
	}
	prog := rawConnect + `
ask("not_listed", "CONNECT not-listed.example:443 HTTP/1.1")
ask("other_port", "CONNECT localhost:1 HTTP/1.1")
ask("ipv4", "CONNECT 127.0.0.1:%d HTTP/1.1" % PORT)
ask("ipv6", "CONNECT [::1]:%d HTTP/1.1" % PORT)
ask("decimal", "CONNECT 2130706433:%d HTTP/1.1" % PORT)
ask("hex", "CONNECT 0x7f.1:%d HTTP/1.1" % PORT)
ask("metadata", "CONNECT 169.254.169.254:80 HTTP/1.1")
ask("loopback_name", "CONNECT localhost:%d HTTP/1.1" % PORT)
ask("trailing_dot", "CONNECT LOCALHOST.:%d HTTP/1.1" % PORT)
ask("unresolvable", "CONNECT aster-not-resolvable.invalid:443 HTTP/1.1")
ask("plain_http", "GET http://localhost:%d/hello HTTP/1.1" % PORT)
try:
    socket.getaddrinfo("example.com", 443)
    print("dns=resolved")
except OSError as e:
    print("dns=" + type(e).__name__)
for i, a in enumerate(os.environ["HOST_ADDRS"].split()):
    try:
        socket.create_connection((a, PORT), timeout=3).close()
        print("direct%d=connected" % i)
    except OSError as e:
        print("direct%d=%s" % (i, type(e).__name__))
`
	spec := reg.spec(prog, run)
	spec.Env["HOST_ADDRS"] = strings.Join(hostAddrs, " ")
	res := s.run(t, spec)
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	want := map[string]string{
		"not_listed": "403", "other_port": "403", "ipv4": "403", "ipv6": "403", "decimal": "403", "hex": "403",
		"metadata": "403", "loopback_name": "403", "trailing_dot": "403", "unresolvable": "502", "plain_http": "405",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if got["dns"] == "" || got["dns"] == "resolved" {
		t.Errorf("DNS inside the sandbox: %q", got["dns"])
	}
	for i := range hostAddrs {
		if v := got["direct"+strconv.Itoa(i)]; v == "" || v == "connected" {
			t.Errorf("direct connect to host address %s: %q", hostAddrs[i], v)
		}
	}
	if n := reg.conns.Load(); n != 0 {
		t.Errorf("the server saw %d connections, want 0", n)
	}
	st := run.Stats()
	if st.Refused != 10 || len(st.Conns) != 10 || st.Bytes != 0 {
		t.Fatalf("stats %+v, want 10 refusals and no bytes", st)
	}
	reasons := map[string]string{}
	for _, c := range st.Conns {
		if c.Refused == "" {
			t.Errorf("tunnel %+v opened", c)
		}
		reasons[c.Host] = c.Refused
	}
	for host, frag := range map[string]string{"not-listed.example": "allow list", "127.0.0.1": "IP literal", "0x7f.1": "IP literal", "2130706433": "IP literal", "localhost": "loopback"} {
		if !strings.Contains(reasons[host], frag) {
			t.Errorf("refusal of %s: %q, want it to mention %q", host, reasons[host], frag)
		}
	}
}

// N3: past the connection cap every tunnel is refused; the run completes.
func (s *suite) n3RelayConnectionCap(t *testing.T) {
	reg := newRegistry(t)
	pol := reg.policy()
	pol.MaxConns = 5
	run := pol.NewRun(t.Name())
	res := s.run(t, reg.spec(rawConnect+`
import collections, threading
codes = collections.Counter()
lock = threading.Lock()
def one(i):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
    try:
        s.sendall(b"CONNECT localhost:%d HTTP/1.1\r\n\r\n" % PORT)
        data = s.recv(4096)
        code = data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "closed"
    except OSError as e:
        code = type(e).__name__
    finally:
        s.close()
    with lock:
        codes[code] += 1
ts = [threading.Thread(target=one, args=(i,)) for i in range(100)]
for i in range(0, 100, 10):
    for t in ts[i:i+10]: t.start()
    for t in ts[i:i+10]: t.join()
for k, v in codes.items():
    print("code%s=%d" % (k, v))
`, run))
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	ok, _ := strconv.Atoi(got["code200"])
	total := 0
	for k, v := range got {
		if strings.HasPrefix(k, "code") {
			n, _ := strconv.Atoi(v)
			total += n
		}
	}
	if ok != 5 || total != 100 {
		t.Fatalf("answers %v: want 5 tunnels opened of 100", got)
	}
	st := run.Stats()
	if st.Refused != 95 || st.Dropped != 95 || len(st.Conns) != 5 {
		t.Fatalf("stats: %d refused, %d dropped, %d listed; want 95, 95, 5", st.Refused, st.Dropped, len(st.Conns))
	}
	if n := reg.conns.Load(); n > 5 {
		t.Fatalf("the server saw %d connections, want at most 5", n)
	}
}

// N4: a run past its byte cap has the tunnel cut, with the reason recorded;
// the run itself completes.
func (s *suite) n4RelayByteCap(t *testing.T) {
	reg := newRegistry(t)
	pol := reg.policy()
	pol.MaxBytes = 1 << 20
	run := pol.NewRun(t.Name())
	res := s.run(t, reg.spec(`
import os, ssl, urllib.request
ctx = ssl.create_default_context(cafile="ca.pem")
try:
    body = urllib.request.urlopen("https://localhost:%s/big?n=%d" % (os.environ["REG_PORT"], 16 << 20), context=ctx, timeout=30).read()
    print("got=%d" % len(body))
except Exception as e:
    print("error=" + type(e).__name__)
`, run))
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	if got["error"] == "" {
		t.Fatalf("the download passed the byte cap: %v", got)
	}
	st := run.Stats()
	if len(st.Conns) != 1 || !strings.Contains(st.Conns[0].Cut, "egress cap") {
		t.Fatalf("stats %+v, want one tunnel cut at the cap", st)
	}
	if st.Bytes > 1<<20+2*64<<10 {
		t.Fatalf("%d bytes passed a cap of %d", st.Bytes, 1<<20)
	}
}

// N5: without egress nothing listens on the proxy port.
func (s *suite) n5NoProxyWithoutEgress(t *testing.T) {
	got := s.netProbe(t, `
probe("proxy", socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 3128))
`)
	if got["proxy"] != "ECONNREFUSED" {
		t.Fatalf("proxy port without egress: %q, want ECONNREFUSED", got["proxy"])
	}
}

// exported runs a shell job with an export and returns the result and the
// entries of the exported archive (name → content or link target).
func (s *suite) exported(t *testing.T, script string, l sandbox.Limits) (sandbox.Result, map[string]string, error) {
	t.Helper()
	var buf bytes.Buffer
	if l.TimeoutMS == 0 {
		l.TimeoutMS = 60000
	}
	res, err := s.mgr.Run(t.Context(), sandbox.Spec{Image: s.tgt.Image, Argv: []string{"sh", "-c", script}, Limits: l, Export: &buf})
	entries := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		hdr, terr := tr.Next()
		if terr != nil {
			break
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			entries[hdr.Name] = string(b)
		case tar.TypeSymlink:
			entries[hdr.Name] = "-> " + hdr.Linkname
		case tar.TypeDir:
			entries[hdr.Name] = "dir"
		default:
			entries[hdr.Name] = "type " + string(hdr.Typeflag)
		}
	}
	return res, entries, err
}

// wantExported checks the entries of an export (as exported returns them)
// against want; entries not in want are the caller's to check.
func wantExported(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("export %s: %q, want %q", k, got[k], v)
		}
	}
}

// F5: a job's /work comes back as a tar after the command exits, also on a
// non-zero exit; files, directories and links inside the tree are in it.
func (s *suite) f5Export(t *testing.T) {
	res, got, err := s.exported(t, `mkdir -p node_modules/pkg/bin && echo 'module.exports = 1' > node_modules/pkg/index.js &&
		ln -s ../pkg/index.js node_modules/pkg/bin/run && printf data > top.txt && exit 3`, sandbox.Limits{})
	if err != nil {
		t.Fatalf("run: %v (%s)", err, short(res))
	}
	wantStatus(t, res, sandbox.StatusExitNonzero)
	wantExported(t, got, map[string]string{"node_modules/": "dir", "node_modules/pkg/index.js": "module.exports = 1\n", "node_modules/pkg/bin/run": "-> ../pkg/index.js", "top.txt": "data"})
	if res.Export == nil || res.Export.Error != "" || res.Export.Files != int64(len(got)) || res.Export.Bytes != int64(len("module.exports = 1\n")+4) {
		t.Fatalf("export report %+v, entries %v", res.Export, got)
	}
}

// F6: an export past the cap fails with a clear error, whether the job fills
// the workspace with a sparse file far larger than the workspace or with
// hard links to one big file (each counted at its size).
func (s *suite) f6ExportOverCap(t *testing.T) {
	l := sandbox.Limits{WorkdirBytes: 32 << 20}
	for name, script := range map[string]string{
		"sparse":    `truncate -s 10G huge && echo small > a.txt`,
		"hardlinks": `head -c 20000000 /dev/zero > big && for i in 1 2 3 4; do ln big link$i; done`,
	} {
		t.Run(name, func(t *testing.T) {
			res, _, err := s.exported(t, script, l)
			if !errors.Is(err, sandbox.ErrTooLarge) || res.Status != sandbox.StatusError || !strings.Contains(res.Error, "export /work") || !strings.Contains(res.Error, "too large") {
				t.Fatalf("err %v, result %s: want a too-large export error", err, short(res))
			}
			if res.Export == nil || res.Export.Error == "" || res.Export.Bytes != 0 {
				t.Fatalf("export report %+v", res.Export)
			}
		})
	}
}

// F7: links that point out of /work are exported as links, never followed
// (the host holds no file of the sandbox's /etc); FIFOs and sockets are left
// out; a timeout exports nothing.
func (s *suite) f7ExportHostile(t *testing.T) {
	res, got, err := s.exported(t, `ln -s /etc etc && ln -s /etc/passwd passwd && ln -s ../../.. up && mkfifo fifo &&
		python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")' && echo ok > ok.txt`, sandbox.Limits{})
	if err != nil {
		t.Fatalf("run: %v (%s)", err, short(res))
	}
	wantStatus(t, res, sandbox.StatusOK)
	wantExported(t, got, map[string]string{"etc": "-> /etc", "passwd": "-> /etc/passwd", "up": "-> ../../..", "ok.txt": "ok\n"})
	for k := range got {
		if strings.HasPrefix(k, "etc/") || k == "fifo" || k == "sock" {
			t.Errorf("export holds %s", k)
		}
	}
	if res.Export == nil || res.Export.Skipped != 2 {
		t.Fatalf("export report %+v, want 2 skipped", res.Export)
	}

	res, got, err = s.exported(t, `echo partial > p.txt; sleep 60`, sandbox.Limits{TimeoutMS: 1000})
	if err != nil || res.Status != sandbox.StatusTimeout || len(got) != 0 || res.Export == nil || !strings.Contains(res.Export.Error, "timed out") {
		t.Fatalf("timeout: err %v, result %s, export %v %+v", err, short(res), got, res.Export)
	}
}

// BenchmarkRelay measures one 64 MiB HTTPS download through the egress relay
// (python3 urllib in the sandbox, TLS end to end) and, as "export", the
// export of a 64 MiB /work; each runtime's bench_test.go calls it.
func BenchmarkRelay(b *testing.B, mgr *sandbox.Manager, image string) {
	const size = 64 << 20
	b.Run("download", func(b *testing.B) {
		reg := newRegistry(b)
		pol := reg.policy()
		b.SetBytes(size)
		for b.Loop() {
			run := pol.NewRun("bench")
			spec := reg.spec(fmt.Sprintf(`
import os, ssl, urllib.request
ctx = ssl.create_default_context(cafile="ca.pem")
r = urllib.request.urlopen("https://localhost:%%s/big?n=%d" %% os.environ["REG_PORT"], context=ctx, timeout=60)
n = 0
while True:
    b = r.read(1 << 20)
    if not b:
        break
    n += len(b)
print("got=%%d" %% n)
`, size), run)
			spec.Image = image
			res, err := mgr.Run(b.Context(), spec)
			if err != nil || res.Status != sandbox.StatusOK || !strings.Contains(string(res.Stdout.Data), fmt.Sprintf("got=%d", size)) {
				b.Fatalf("%v %s", err, short(res))
			}
		}
	})
	b.Run("export", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			var n countWriter
			res, err := mgr.Run(b.Context(), sandbox.Spec{Image: image, Argv: []string{"sh", "-c", "mkdir d && for i in $(seq 64); do head -c 1048576 /dev/urandom > d/f$i; done"},
				Limits: sandbox.Limits{WorkdirBytes: 256 << 20, TimeoutMS: 60000}, Export: &n})
			if err != nil || res.Status != sandbox.StatusOK || res.Export == nil || res.Export.Bytes != size {
				b.Fatalf("%v %s %+v", err, short(res), res.Export)
			}
		}
	})
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

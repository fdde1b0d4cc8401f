package securitytest

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
)

// credentialValue is the operator's credential in N11: the registry's
// /whoami says whether a request carried it, and it must appear nowhere in
// the job's output.
const credentialValue = "Bearer n11-operator-secret-5b7e1d"

// N11: for a credentialed host the relay makes the requests itself. The job
// trusts the run's CA (only its certificate is in the workspace), sends its
// own Authorization, Proxy-Authorization and Cookie on one kept-alive
// connection: the registry sees the operator's credential and none of the
// job's. Another Host on that connection (421), TLS for another name, the
// same server under an alias (no credential), another port and the address
// literal are refused or get nothing; the job finds no key and no secret
// anywhere it can read; after the run its relay opens nothing.
func (s *suite) n11RelayCredential(t *testing.T) {
	reg := newRegistry(t)
	pol := reg.policy()
	rule := pol.Allow[0]
	alias := egress.Rule{Host: "alias.test", Port: reg.port}
	pol.Allow = append(pol.Allow, alias)
	pol.Addresses[alias] = pol.Addresses[rule]
	pol.Resolver = mapResolver{"localhost": "127.0.0.1", "alias.test": "127.0.0.1"}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(reg.caPEM)
	pol.Credentials = []egress.Credential{{Rule: rule, Header: "Authorization", Value: credentialValue, RootCAs: roots}}
	run := pol.NewRun(t.Name())
	spec := reg.spec(rawConnect+`
import http.client, ssl
ctx = ssl.create_default_context(cafile="ca.pem")
c = http.client.HTTPSConnection("127.0.0.1", 3128, context=ctx, timeout=30)
c.set_tunnel("localhost", PORT)
for i in range(3):
    c.request("GET", "/whoami?token=q", headers={"Authorization": "Bearer job-own", "Cookie": "s=1", "Proxy-Authorization": "Basic eDp5"})
    r = c.getresponse()
    print("whoami%d=%d:%s" % (i, r.status, r.read().decode()))
c.putrequest("GET", "/whoami", skip_host=True)
c.putheader("Host", "alias.test:%d" % PORT)
c.endheaders()
r = c.getresponse(); r.read()
print("other_host=%d" % r.status)
c.close()
u = http.client.HTTPSConnection("127.0.0.1", 3128, context=ssl._create_unverified_context(), timeout=30)
u.set_tunnel("alias.test", PORT)
u.request("GET", "/whoami")
r = u.getresponse()
print("alias=%d:%s" % (r.status, r.read().decode()))
u.close()
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(b"CONNECT localhost:%d HTTP/1.1\r\n\r\n" % PORT)
s.recv(4096)
try:
    ssl.create_default_context(cafile="ca.pem").wrap_socket(s, server_hostname="alias.test")
    print("sni=accepted")
except (ssl.SSLError, OSError) as e:
    print("sni=" + type(e).__name__)
ask("other_port", "CONNECT localhost:1 HTTP/1.1")
ask("literal", "CONNECT 127.0.0.1:%d HTTP/1.1" % PORT)
found = []
needle = b"PRIVATE" + b" KEY"  # not spelt whole: the program is in /proc/self/cmdline
for root in ("/work", "/tmp", "/proc/self"):
    for d, _, files in os.walk(root):
        for f in files:
            try:
                b = open(os.path.join(d, f), "rb").read(1 << 20)
            except OSError:
                continue
            if needle in b:
                found.append(os.path.join(d, f))
            print("file %s %s" % (os.path.join(d, f), b[:4096]))
        if root == "/proc/self":
            break
print("keys=%d" % len(found))
print("key_files=%s" % ",".join(found))
print("env %r" % dict(os.environ))
`, run)
	spec.Workspace.Files["ca.pem"] = run.CACertPEM()
	res := s.run(t, spec)
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	for k, v := range map[string]string{
		"whoami0": "200:auth=operator,cookie=false,proxyauth=false", "whoami1": "200:auth=operator,cookie=false,proxyauth=false",
		"whoami2": "200:auth=operator,cookie=false,proxyauth=false", "other_host": "421", "alias": "200:auth=missing,cookie=false,proxyauth=false",
		"other_port": "403", "literal": "403", "keys": "0",
	} {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if got["sni"] == "" || got["sni"] == "accepted" {
		t.Errorf("TLS for another name through the credentialed tunnel: %q", got["sni"])
	}
	out := append(append([]byte(nil), res.Stdout.Data...), res.Stderr.Data...)
	secret := strings.TrimPrefix(credentialValue, "Bearer ")
	if bytes.Contains(out, []byte(secret)) || bytes.Contains(out, []byte(base64.StdEncoding.EncodeToString([]byte(credentialValue)))) {
		t.Fatal("the credential is in the job's output")
	}
	if !bytes.Contains(out, []byte("file /work/ca.pem")) {
		t.Errorf("the job did not read its workspace: %s", short(res))
	}
	var credTunnels int
	var requests int64
	for _, c := range run.Stats().Conns {
		if c.Credential {
			credTunnels++
			requests += c.Requests
		}
	}
	if credTunnels != 2 || requests != 4 {
		t.Errorf("credentialed tunnels %d with %d requests, want 2 (one refused at TLS) with 4 (keep-alive)", credTunnels, requests)
	}
	run.Close()
	if _, err := run.DialEgress(t.Context(), rule.Host, rule.Port); egress.KindOf(err) != egress.KindRunEnded {
		t.Fatalf("a tunnel after the run: %v", err)
	}
}

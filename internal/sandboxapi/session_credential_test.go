package sandboxapi

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/safetext/safetexttest"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/testkit"
)

// credFetchScript fetches https://HOST:PORT/pkg through the exec's proxy
// with an Authorization of its own, verifying the host against the roots
// SSL_CERT_FILE names (or nothing, with "noverify"), and prints
// "fetch=STATUS BODY" or "fetch=error ...". With "hold" it keeps its
// tunnel until /tmp/switched exists, then asks again on it.
const credFetchScript = `import http.client, os, ssl, sys, time
proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl._create_unverified_context() if mode == "noverify" else ssl.create_default_context()
c = http.client.HTTPSConnection(proxy[0].split("//")[1], int(proxy[1]), timeout=30, context=ctx)
c.set_tunnel(host, port)
def get(label):
    c.request("GET", "/pkg", headers={"Authorization": "Bearer sent-by-the-sandbox"})
    r = c.getresponse()
    print("%s=%d %s" % (label, r.status, r.read().decode()))
try:
    get("fetch")
except Exception as e:
    print("fetch=error %s %s" % (type(e).__name__, e))
    sys.exit(0)
if mode == "hold":
    open("/work/first-ok", "w").close()
    for _ in range(600):
        if os.path.exists("/tmp/switched"):
            break
        time.sleep(0.1)
    try:
        get("after")
    except Exception as e:
        print("after=closed %s" % type(e).__name__)
`

// credDumpScript writes everything the session can read that might hold
// a secret into /work/dump.bin: the environment of every process it can
// see, their command lines, and the files under the usual places.
const credDumpScript = `import glob, os
out = []
for p in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
    try:
        out.append(open(p, "rb").read())
    except Exception:
        pass
for top in ["/work", "/tmp", "/home", "/root", "/etc", "/run", "/var/tmp"]:
    for d, _, files in os.walk(top):
        for f in files:
            p = os.path.join(d, f)
            if p == "/work/dump.bin" or os.path.islink(p):
                continue
            try:
                if os.path.getsize(p) < (1 << 20):
                    out.append(open(p, "rb").read())
            except Exception:
                pass
open("/work/dump.bin", "wb").write(b"\n".join(out))
print("dumped %d" % len(out))
`

// credHost is an HTTPS host on loopback (a test CA's certificate) that
// answers only a request carrying its secret and records the Authorization
// of every request.
type credHost struct {
	*testkit.TLSHost
	port int
	mu   sync.Mutex
	auth []string
}

func newCredHost(t *testing.T, name, secret string) *credHost {
	h := &credHost{TLSHost: testkit.IssueTLS(t, name)}
	h.port = h.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.auth = append(h.auth, r.Header.Get("Authorization"))
		h.mu.Unlock()
		if r.Header.Get("Authorization") != secret {
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "private:%s", r.URL.Path)
	}))
	return h
}

func (h *credHost) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auth...)
}

// A session whose profile has a credential reaches the credentialed host
// with the credential added by the relay (the sandbox's own Authorization
// dropped), trusting the session's CA through the usual variables; the
// secret is in nothing the session can read or print; a switch to a
// profile without the credential closes the tunnels and leaves the host
// unreachable through the session's CA (and served without the credential
// when the sandbox skips verification); a switch back works with the same
// CA. On docker, oci, gVisor and microvm.
func TestSessionEgressCredential(t *testing.T) {
	forSessionRuntimes(t, sessionCredentialCase)
}

// forSessionRuntimes runs f as a subtest on each runtime that holds
// sessions: docker, oci (crun), gVisor and microvm (each skips or fails as its
// runtime's tests do where it is absent).
func forSessionRuntimes(t *testing.T, f func(t *testing.T, rt sandbox.Runtime)) {
	for _, c := range []struct {
		name string
		rt   func(t *testing.T) sandbox.Runtime
	}{
		{"docker", func(t *testing.T) sandbox.Runtime { rt, _ := testRuntime(t); return rt }},
		{"oci", func(t *testing.T) sandbox.Runtime { return ocitest.Runtime(t) }},
		{"gvisor", func(t *testing.T) sandbox.Runtime { return ocitest.GVisor(t) }},
		{"microvm", func(t *testing.T) sandbox.Runtime { return microvmtest.Runtime(t) }},
	} {
		t.Run(c.name, func(t *testing.T) { f(t, c.rt(t)) })
	}
}

func sessionCredentialCase(t *testing.T, rt sandbox.Runtime) {
	const secret = "Bearer session-secret-5d1e0c9a7b"
	host := newCredHost(t, "reg.test", secret)
	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rule := egress.Rule{Host: "reg.test", Port: host.port}
	profile := func(cred bool) *egress.Policy {
		p := loopbackPolicy(mapResolver{"reg.test": "127.0.0.1"}, rule)
		p.Logger = log
		if cred {
			p.Credentials = []egress.Credential{{Rule: rule, Header: "Authorization", Value: secret, RootCAs: host.Pool}}
		}
		return p
	}
	profiles := map[string]*egress.Policy{"cred": profile(true), "plain": profile(false)}
	toks := mustTokens(t, "token-cred-aaaaaaaaaaa egress=cred,plain\n")
	h := newHarness(t, harnessOpts{runtime: rt, server: func(o *Options) {
		o.Tokens, o.EgressProfiles, o.Logger = toks, profiles, log
	}})
	h.token = "token-cred-aaaaaaaaaaa"
	ctx := context.Background()

	sess, base, body := h.createSessionBody(api.SessionRequest{EgressProfile: "cred", TTL: "10m",
		Files: map[string]api.File{"fetch.py": {Content: credFetchScript}, "dump.py": {Content: credDumpScript}}})
	if sess.EgressProfile != "cred" {
		t.Fatalf("create answered %s", body)
	}
	var seen bytes.Buffer // everything the session printed or answered
	seen.Write(body)
	exec := func(argv ...string) string { t.Helper(); return h.sessionExecTo(&seen, base, argv...) }
	switchTo := func(name string) { t.Helper(); h.setSessionEgress(base, name) }
	port := fmt.Sprint(host.port)

	// The variables name the bundle, which holds the CA's certificate only.
	if out := exec("sh", "-c", `echo "$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $GIT_SSL_CAINFO $PIP_CERT"; grep -c "PRIVATE KEY" /work/.aster/egress-ca.pem; grep -c "BEGIN CERTIFICATE" /work/.aster/egress-ca.pem`); !strings.HasPrefix(out, strings.Repeat("/work/.aster/egress-ca.pem ", 3)+"/work/.aster/egress-ca.pem\n0\n") {
		t.Fatalf("the session's trust: %q", out)
	}
	if out := exec("python3", "fetch.py", "reg.test", port, "once"); !strings.Contains(out, "fetch=200 private:/pkg") {
		t.Fatalf("with the credential: %s", out)
	}
	// Git finds the CA through GIT_SSL_CAINFO and its proxy through
	// https_proxy: its request reaches the host with the credential (the
	// host is no Git server, so git then fails on the answer, not on TLS).
	if out := exec("sh", "-c", "git ls-remote https://reg.test:"+port+"/repo.git 2>&1; true"); strings.Contains(out, "SSL") || strings.Contains(out, "certificate") {
		t.Fatalf("git through the session's CA: %s", out)
	}
	if a := host.seen(); len(a) < 2 {
		t.Fatalf("git's request did not reach the host: %d requests", len(a))
	}
	for i, a := range host.seen() {
		if a != secret {
			t.Fatalf("request %d reached the host with Authorization %q, want the relay's (the sandbox's dropped)", i, a)
		}
	}

	// A command holds its tunnel while the profile loses the credential.
	held := h.holdExec(base, "python3", "fetch.py", "reg.test", port, "hold")
	before := len(host.seen())
	switchTo("plain")
	exec("touch", "/tmp/switched")
	out := <-held
	seen.WriteString(out)
	if !strings.Contains(out, "fetch=200 private:/pkg") || !strings.Contains(out, "after=closed") {
		t.Fatalf("the tunnel of the credentialed profile: %s", out)
	}
	if n := len(host.seen()); n != before {
		t.Fatalf("%d requests reached the host on the closed tunnel", n-before)
	}
	// Without the credential the session's CA answers for nothing: the
	// host's own certificate fails verification, and a sandbox that skips
	// it is served without the credential (its own header reaches the host).
	if out := exec("python3", "fetch.py", "reg.test", port, "once"); !strings.Contains(out, "fetch=error") || !strings.Contains(out, "CERTIFICATE_VERIFY_FAILED") {
		t.Fatalf("after the switch to plain: %s", out)
	}
	if out := exec("python3", "fetch.py", "reg.test", port, "noverify"); !strings.Contains(out, "fetch=401") {
		t.Fatalf("after the switch to plain, not verifying: %s", out)
	}
	if a := host.seen(); a[len(a)-1] != "Bearer sent-by-the-sandbox" {
		t.Fatalf("without the credential the host saw %q", a[len(a)-1])
	}
	// Back to the credential: the same CA, no new trust needed.
	switchTo("cred")
	if out := exec("python3", "fetch.py", "reg.test", port, "once"); !strings.Contains(out, "fetch=200 private:/pkg") {
		t.Fatalf("back with the credential: %s", out)
	}

	// The secret is nowhere the session can read, nor in what it printed,
	// nor in the server's log (which names each credentialed request).
	exec("python3", "dump.py")
	resp, dump := h.do(ctx, http.MethodGet, base+"/files/dump.bin", "", nil)
	if resp.StatusCode != http.StatusOK || len(dump) < 1000 {
		t.Fatalf("the dump: %d, %d bytes", resp.StatusCode, len(dump))
	}
	resp, archive := h.do(ctx, http.MethodGet, base+"/files?format=tar", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the archive of /work: %d %s", resp.StatusCode, archive)
	}
	for what, b := range map[string][]byte{"the dump": dump, "/work": archive, "the answers": seen.Bytes(), "the server's log": []byte(logs.String())} {
		if bytes.Contains(b, []byte("session-secret")) {
			t.Errorf("%s holds the secret", what)
		}
		// The image's gitleaks rules mention "PRIVATE KEY" in a pattern: what
		// must not be there is a key that parses.
		if typ := safetexttest.ParsablePrivateKey(b); typ != "" && what != "the server's log" {
			t.Errorf("%s holds a private key (%s)", what, typ)
		}
	}
	if !strings.Contains(logs.String(), "egress request with credential") || !strings.Contains(logs.String(), "path=/pkg") {
		t.Errorf("the log does not name the credentialed requests:\n%s", logs.String())
	}
}

// A session's CA signs only for the credentialed hosts of the profiles its
// token may use (SECURITY.md N12): a session made with profile a, by a
// token granted a only, trusts a CA that may not sign for b.test, the host
// only profile b (another token's) sends a credential to; it cannot be
// switched to b; and when a reload makes its own profile send b.test's
// credential too, the session is left no profile rather than shown a
// certificate for b.test, so b.test never receives b's secret from it. A
// session the same token makes after the reload may reach b.test with the
// credential. On docker (the relay and its CA are host code).
func TestSessionCAOnlyForTokenProfiles(t *testing.T) {
	const secretA, secretB = "Bearer secret-of-a-3c0f1e", "Bearer secret-of-b-9a7d42"
	hostA, hostB := newCredHost(t, "a.test", secretA), newCredHost(t, "b.test", secretB)
	ruleA, ruleB := egress.Rule{Host: "a.test", Port: hostA.port}, egress.Rule{Host: "b.test", Port: hostB.port}
	res := mapResolver{"a.test": "127.0.0.1", "b.test": "127.0.0.1"}
	credA := egress.Credential{Rule: ruleA, Header: "Authorization", Value: secretA, RootCAs: hostA.Pool}
	credB := egress.Credential{Rule: ruleB, Header: "Authorization", Value: secretB, RootCAs: hostB.Pool}
	profA, profB := loopbackPolicy(res, ruleA), loopbackPolicy(res, ruleB)
	profA.Credentials, profB.Credentials = []egress.Credential{credA}, []egress.Credential{credB}
	toks := mustTokens(t, "token-ca-aaaaaaaaaaaaaa egress=a\ntoken-ca-bbbbbbbbbbbbbb egress=b\n")
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.Tokens, o.EgressProfiles = toks, map[string]*egress.Policy{"a": profA, "b": profB}
	}})
	h.token = "token-ca-aaaaaaaaaaaaaa"
	ctx := context.Background()
	create := func() string {
		t.Helper()
		_, base := h.createSession(api.SessionRequest{EgressProfile: "a", TTL: "5m",
			Files: map[string]api.File{"fetch.py": {Content: credFetchScript}}})
		return base
	}
	// sessionCA is the session's own CA among the roots it trusts.
	sessionCA := func(base string) *x509.Certificate {
		t.Helper()
		resp, bundle := h.do(ctx, http.MethodGet, base+"/files/"+sessionCAFile, "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the session's roots: %d %s", resp.StatusCode, bundle)
		}
		for b, rest := pem.Decode(bundle); b != nil; b, rest = pem.Decode(rest) {
			c, err := x509.ParseCertificate(b.Bytes)
			if err == nil && c.IsCA && strings.HasPrefix(c.Subject.CommonName, "Aster egress relay") {
				return c
			}
		}
		t.Fatalf("no session CA among the session's roots")
		return nil
	}
	base := create()
	if got := sessionCA(base).PermittedDNSDomains; !slices.Equal(got, []string{"a.test"}) {
		t.Fatalf("the session's CA may sign for %q, want a.test only", got)
	}
	portA, portB := fmt.Sprint(hostA.port), fmt.Sprint(hostB.port)
	if out := h.sessionExec(base, "python3", "fetch.py", "a.test", portA, "once"); !strings.Contains(out, "fetch=200 private:/pkg") {
		t.Fatalf("a.test with its credential: %s", out)
	}
	resp, body := h.do(ctx, http.MethodPut, base+"/egress", api.ContentTypeJSON, strings.NewReader(`{"profile":"b"}`))
	errorOf(t, resp, body, http.StatusForbidden, "forbidden")

	// Profile a now sends b.test's credential too: not for this session.
	wideA := loopbackPolicy(res, ruleA, ruleB)
	wideA.Credentials = []egress.Credential{credA, credB}
	if sum := h.srv.SetEgressProfiles(map[string]*egress.Policy{"a": wideA, "b": profB}); sum.Cleared != 1 || sum.Changed != 0 {
		t.Fatalf("reload summary %+v, want the session cleared", sum)
	}
	if out := h.sessionExec(base, "python3", "fetch.py", "b.test", portB, "once"); !strings.Contains(out, "fetch=error") {
		t.Fatalf("b.test from the session made before: %s", out)
	}
	if n := len(hostB.seen()); n != 0 {
		t.Fatalf("b.test got %d requests from the session made before", n)
	}
	// The same token's session made now: its CA covers b.test, the fetch
	// reaches it with the credential.
	later := create()
	if got := sessionCA(later).PermittedDNSDomains; !slices.Equal(got, []string{"a.test", "b.test"}) {
		t.Fatalf("the later session's CA may sign for %q", got)
	}
	if out := h.sessionExec(later, "python3", "fetch.py", "b.test", portB, "once"); !strings.Contains(out, "fetch=200 private:/pkg") {
		t.Fatalf("b.test from the session made after: %s", out)
	}
	if a := hostB.seen(); len(a) != 1 || a[0] != secretB {
		t.Fatalf("b.test saw %q", a)
	}
}

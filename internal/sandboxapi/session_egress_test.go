package sandboxapi

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
)

// mapResolver answers from a table, as a private DNS zone would.
type mapResolver map[string]string

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// fetchScript fetches http://HOST:PORT/hello through the exec's proxy
// (HTTPS_PROXY, which the session sets) and prints "HOST=status body" or
// "HOST=refused <reason>". With "hold", it keeps its tunnel open until
// /tmp/switched exists, then asks again on it.
const fetchScript = `import http.client, os, sys, time
proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
port = int(sys.argv[1])
for host in sys.argv[3:]:
    c = http.client.HTTPConnection(proxy[0].split("//")[1], int(proxy[1]), timeout=30)
    c.set_tunnel(host, port)
    try:
        c.request("GET", "/hello")
        r = c.getresponse()
        print("%s=%d %s" % (host, r.status, r.read().decode()))
    except OSError as e:
        print("%s=refused %s" % (host, e))
        continue
    if sys.argv[2] == "hold":
        open("/work/first-ok", "w").close()
        for _ in range(600):
            if os.path.exists("/tmp/switched"):
                break
            time.sleep(0.1)
        try:
            c.request("GET", "/hello")
            r = c.getresponse()
            print("%s-after=%d %s" % (host, r.status, r.read().decode()))
        except Exception as e:
            print("%s-after=closed %s" % (host, type(e).__name__))
`

// A session's egress follows the operator's profiles: a token uses only
// the profiles granted to it, a request names a profile and nothing else,
// and a switch while the session runs closes the previous profile's
// tunnels at once (a command holding one sees it end) and decides every
// later tunnel by the new profile. Concurrent execs each get a proxy.
// On docker, oci, gVisor and microvm.
func TestSessionEgressHTTP(t *testing.T) {
	forSessionRuntimes(t, sessionEgressCase)
}

func sessionEgressCase(t *testing.T, rt sandbox.Runtime) {
	port := serveHello(t)
	a, b := egress.Rule{Host: "a.test", Port: port}, egress.Rule{Host: "b.test", Port: port}
	res := mapResolver{"a.test": "127.0.0.1", "b.test": "127.0.0.1"}
	profiles := map[string]*egress.Policy{"wide": loopbackPolicy(res, a, b), "narrow": loopbackPolicy(res, a)}
	toks := mustTokens(t, "token-egress-aaaaaaaa egress=wide,narrow\ntoken-egress-bbbbbbbb\n")
	h := newHarness(t, harnessOpts{runtime: rt, server: func(o *Options) { o.Tokens = toks; o.EgressProfiles = profiles }})
	ctx := context.Background()

	h.token = "token-egress-bbbbbbbb"
	resp, body := h.postJSON(api.RouteSessions, api.SessionRequest{EgressProfile: "wide"})
	errorOf(t, resp, body, http.StatusForbidden, "forbidden")
	h.token = "token-egress-aaaaaaaa"
	resp, body = h.postJSON(api.RouteSessions, api.SessionRequest{EgressProfile: "nope"})
	errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec")

	sess, base := h.createSession(api.SessionRequest{EgressProfile: "wide", TTL: "5m",
		Files: map[string]api.File{"fetch.py": {Content: fetchScript}}})
	if sess.EgressProfile != "wide" {
		t.Fatalf("create answered %+v", sess)
	}
	exec := func(argv ...string) string { t.Helper(); return h.sessionExec(base, argv...) }
	p := fmt.Sprint(port)
	if out := exec("python3", "fetch.py", p, "once", "a.test", "b.test"); !strings.Contains(out, "a.test=200 hello-a") || !strings.Contains(out, "b.test=200 hello-b") {
		t.Fatalf("with the wide profile: %s", out)
	}

	// A command holds its tunnel to b.test while the profile narrows.
	held := h.holdExec(base, "python3", "fetch.py", p, "hold", "b.test")
	h.setSessionEgress(base, "narrow")
	exec("touch", "/tmp/switched") // a second exec while the first runs: its own proxy port
	out := <-held
	if !strings.Contains(out, "b.test=200 hello-b") || !strings.Contains(out, "b.test-after=closed") {
		t.Fatalf("the tunnel of the previous profile: %s", out)
	}
	if out := exec("python3", "fetch.py", p, "once", "a.test", "b.test"); !strings.Contains(out, "a.test=200 hello-a") || !strings.Contains(out, "b.test=refused") || !strings.Contains(out, "403") {
		t.Fatalf("with the narrow profile: %s", out)
	}

	// None (through the Go client): every tunnel refused.
	cl, err := client.New(client.Options{BaseURL: h.base, Token: h.token})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cl.SetSessionEgress(ctx, sess.ID, ""); err != nil || got.EgressProfile != "" {
		t.Fatalf("client SetSessionEgress: %+v %v", got, err)
	}
	if out := exec("python3", "fetch.py", p, "once", "a.test"); !strings.Contains(out, "a.test=refused") {
		t.Fatalf("with no profile: %s", out)
	}
	// Another token can neither see nor switch the session.
	h.token = "token-egress-bbbbbbbb"
	resp, body = h.do(ctx, http.MethodPut, base+"/egress", api.ContentTypeJSON, bytes.NewReader([]byte(`{"profile":"wide"}`)))
	errorOf(t, resp, body, http.StatusNotFound, "not_found")
	h.token = "token-egress-aaaaaaaa"
	resp, body = h.do(ctx, http.MethodGet, base, "", nil)
	if got := decodeOK[api.Session](t, resp, body); got.EgressProfile != "" {
		t.Fatalf("profile after none: %q", got.EgressProfile)
	}
}

// A token file line may grant egress profiles after the token; anything
// else after it, or a bad name, is refused.
func TestTokenProfiles(t *testing.T) {
	toks, err := ParseTokens(strings.NewReader("# ops\ntoken-with-two-profiles egress=npm,pypi.corp\ntoken-without-profiles\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := toks.Profiles("token-with-two-profiles"); len(got) != 2 || got[0] != "npm" || got[1] != "pypi.corp" {
		t.Fatalf("profiles %q", got)
	}
	if got := toks.Profiles("token-without-profiles"); len(got) != 0 {
		t.Fatalf("profiles %q", got)
	}
	if got := toks.Profiles("token-not-in-the-file"); len(got) != 0 || toks.Valid("token-not-in-the-file") {
		t.Fatalf("an unknown token: %q", got)
	}
	if !toks.Valid("token-with-two-profiles") || toks.Valid("token-with-two-profiles egress=npm,pypi.corp") {
		t.Fatal("the token is the first field only")
	}
	for _, bad := range []string{"token-aaaaaaaaaaaaaa admin=yes", "token-aaaaaaaaaaaaaa egress=", "token-aaaaaaaaaaaaaa egress=a/b", "token-aaaaaaaaaaaaaa egress=" + strings.Repeat("x", 65)} {
		if _, err := ParseTokens(strings.NewReader(bad + "\n")); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A reload of the egress profiles re-decides every live session by its
// profile's new definition: an unchanged profile keeps its tunnels open,
// a changed one is switched (its tunnels closed, the new allow list in
// force), a removed one leaves the session none with the reason in every
// refusal; a profile that now sends a credential cannot be set on a session
// whose CA was not made for it, and a session made after the reload
// gets the new set.
func TestSessionEgressReload(t *testing.T) {
	port := serveHello(t)
	a, b := egress.Rule{Host: "a.test", Port: port}, egress.Rule{Host: "b.test", Port: port}
	res := mapResolver{"a.test": "127.0.0.1", "b.test": "127.0.0.1"}
	policy := func(rules ...egress.Rule) *egress.Policy { return loopbackPolicy(res, rules...) }
	h := newHarness(t, harnessOpts{maxConcurrent: 8, server: func(o *Options) {
		o.EgressProfiles = map[string]*egress.Policy{"wide": policy(a, b), "narrow": policy(a), "gone": policy(a)}
	}})
	ctx := context.Background()
	create := func(profile string) string {
		t.Helper()
		_, base := h.createSession(api.SessionRequest{EgressProfile: profile, TTL: "5m",
			Files: map[string]api.File{"fetch.py": {Content: fetchScript}}})
		return base
	}
	exec := h.sessionExec
	p := fmt.Sprint(port)
	wide, narrow, gone := create("wide"), create("narrow"), create("gone")

	// The narrow session holds a tunnel across the reload.
	held := h.holdExec(narrow, "python3", "fetch.py", p, "hold", "a.test")
	// Reloaded: narrow the same (new objects), wide now b only, gone gone,
	// cred new with a credential.
	cred := policy(a)
	cred.Credentials = []egress.Credential{{Rule: a, Header: "Authorization", Value: "Bearer reload-secret"}}
	sum := h.srv.SetEgressProfiles(map[string]*egress.Policy{"wide": policy(b), "narrow": policy(a), "cred": cred})
	if sum.Kept != 1 || sum.Changed != 1 || sum.Cleared != 1 || strings.Join(sum.Profiles, ",") != "cred,narrow,wide" {
		t.Fatalf("reload summary %+v", sum)
	}
	exec(narrow, "touch", "/tmp/switched")
	if out := <-held; !strings.Contains(out, "a.test-after=200 hello-a") {
		t.Fatalf("the unchanged profile's tunnel across the reload: %s", out)
	}
	if out := exec(wide, "python3", "fetch.py", p, "once", "a.test", "b.test"); !strings.Contains(out, "a.test=refused") || !strings.Contains(out, "b.test=200 hello-b") {
		t.Fatalf("the changed profile after the reload: %s", out)
	}
	resp, body := h.do(ctx, http.MethodGet, gone, "", nil)
	if got := decodeOK[api.Session](t, resp, body); got.EgressProfile != "" {
		t.Fatalf("the removed profile's session: %+v", got)
	}
	if out := exec(gone, "python3", "fetch.py", p, "once", "a.test"); !strings.Contains(out, "a.test=refused") {
		t.Fatalf("the removed profile's session fetched: %s", out)
	}
	// The reason reaches the sandbox in the proxy's refusal.
	if out := exec(gone, "sh", "-c", `python3 -c '
import os, socket
h, p = os.environ["HTTPS_PROXY"].rsplit(":", 1)
s = socket.create_connection((h.split("//")[1], int(p)))
s.sendall(b"CONNECT a.test:`+p+` HTTP/1.1\r\nHost: a.test\r\n\r\n")
print(s.recv(4096).decode())'`); !strings.Contains(out, "403") || !strings.Contains(out, `removed profile "gone"`) {
		t.Fatalf("the refusal after the removal: %s", out)
	}
	// The new credentialed profile: not for a session made before (no CA
	// for its host), usable by one made after.
	resp, body = h.do(ctx, http.MethodPut, wide+"/egress", api.ContentTypeJSON, bytes.NewReader([]byte(`{"profile":"cred"}`)))
	if e := errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec"); !strings.Contains(e.Message, "a.test") {
		t.Fatalf("cred on an older session: %s", e.Message)
	}
	later := create("cred")
	if out := exec(later, "sh", "-c", "test -s /work/.aster/egress-ca.pem && echo $SSL_CERT_FILE"); !strings.Contains(out, "/work/.aster/egress-ca.pem") {
		t.Fatalf("a session made after the reload: %q", out)
	}
}

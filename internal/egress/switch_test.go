package egress

import (
	"bytes"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A session's relay follows the operator's switches: no profile refuses,
// a profile allows its hosts, a switch to a narrower one closes the
// tunnels already open and refuses what it does not allow, Close ends all.
func TestSwitch(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c) // echo
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	a, b := Rule{"a.test", port}, Rule{"b.test", port}
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	wide := &Policy{Allow: []Rule{a, b}, Addresses: loopbackAdmitted(a, b), Resolver: resolver{"a.test": lo, "b.test": lo}}
	narrow := &Policy{Allow: []Rule{a}, Addresses: loopbackAdmitted(a), Resolver: resolver{"a.test": lo}}

	sw := NewSwitch("s-1")
	if _, err := sw.DialEgress(t.Context(), "a.test", port); KindOf(err) != KindNoProfile {
		t.Fatalf("no profile: %v", err)
	}
	if err := sw.Set("wide", wide); err != nil {
		t.Fatal(err)
	}
	if sw.Profile() != "wide" {
		t.Fatalf("profile %q", sw.Profile())
	}
	kept, err := sw.DialEgress(t.Context(), "b.test", port)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, kept, "before")
	if err := sw.Set("narrow", narrow); err != nil {
		t.Fatal(err)
	}
	kept.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := kept.Write([]byte("after")); err == nil {
		if _, err := kept.Read(make([]byte, 5)); err == nil {
			t.Error("a tunnel of the previous profile still carries data after the switch")
		}
	}
	if _, err := sw.DialEgress(t.Context(), "b.test", port); KindOf(err) != KindNotAllowed {
		t.Fatalf("b.test after narrowing: %v", err)
	}
	c, err := sw.DialEgress(t.Context(), "a.test", port)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c, "narrow")
	if st := sw.Stats(); len(st.Conns) != 1 || st.Conns[0].Kind != KindNotAllowed {
		t.Errorf("stats of the profile in force %+v (the open tunnel is not in them yet)", st)
	}
	if err := sw.Set("", nil); err != nil || sw.Profile() != "" {
		t.Fatalf("to none: %v %q", err, sw.Profile())
	}
	if _, err := c.Write([]byte("x")); err == nil {
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("a tunnel survived the switch to no profile")
		}
	}
	if err := sw.Set("cred", &Policy{Allow: []Rule{a}, Credentials: []Credential{{Rule: a, Header: "Authorization", Value: "x"}}}); !errors.Is(err, ErrSwitchCredentials) {
		t.Fatalf("credentials in a session profile: %v", err)
	}
	sw.Set("wide", wide)
	sw.Close()
	if _, err := sw.DialEgress(t.Context(), "a.test", port); KindOf(err) != KindRunEnded {
		t.Fatalf("after Close: %v", err)
	}
	if err := sw.Set("wide", wide); err == nil {
		t.Fatal("Set after Close")
	}
}

func echo(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, len(msg))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != msg {
		t.Fatalf("echo %q: %q %v", msg, b, err)
	}
}

// A session's Switch with a CA of its own injects the credential of the
// profile in force, with the one CA across switches (the sandbox trusts it
// once); a switch to a profile without the credential leaves the host
// served without it (the upstream's own certificate, its 401); a profile
// whose credentialed host the CA was not made for is refused.
func TestSwitchCredentials(t *testing.T) {
	a := newAuthServer(t)
	var logs bytes.Buffer
	cred, rule := credPolicy(a, testSecret, &logs)
	plain := *cred
	plain.Credentials = nil
	other := *cred
	other.Credentials = []Credential{{Rule: Rule{"alias.test", a.port}, Header: "Authorization", Value: testSecret, RootCAs: a.pool}}

	if err := NewSwitch("s-plain").Set("cred", cred); !errors.Is(err, ErrSwitchCredentials) {
		t.Fatalf("a Switch without a CA took credentials: %v", err)
	}
	sw, err := NewCredentialSwitch("s-cred", []string{rule.Host}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	caPEM := sw.CACertPEM()
	if bytes.Contains(caPEM, []byte("PRIVATE KEY")) || len(caPEM) == 0 {
		t.Fatalf("the session's CA certificate: %q", caPEM)
	}
	if err := sw.Set("other", &other); !errors.Is(err, ErrSwitchCredentials) || !strings.Contains(err.Error(), "alias.test") {
		t.Fatalf("a credentialed host outside the CA: %v", err)
	}
	url := "https://reg.test:" + strconv.Itoa(a.port) + "/pkg"
	stolen := http.Header{"Authorization": {"Bearer sent-by-the-job"}}
	for round := range 2 {
		if err := sw.Set("cred", cred); err != nil {
			t.Fatal(err)
		}
		c := dialerClient(t, sw, "", caPEM)
		if status, body, _ := get(t, c, url, stolen); status != http.StatusOK || body != "private:/pkg" {
			t.Fatalf("round %d with the credential: %d %q", round, status, body)
		}
		c.CloseIdleConnections()
		if err := sw.Set("plain", &plain); err != nil {
			t.Fatal(err)
		}
		// The job trusting only the session's CA cannot reach the host now
		// (the relay shows the upstream's own certificate) ...
		if _, err := dialerClient(t, sw, "", caPEM).Get(url); err == nil {
			t.Fatalf("round %d: the session's CA still answers for %s after the switch", round, rule.Host)
		}
		// ... and one trusting the upstream too gets its 401: no credential.
		if status, _, _ := get(t, dialerClient(t, sw, "", caPEM, a.caPEM), url, nil); status != http.StatusUnauthorized {
			t.Fatalf("round %d without the credential: %d", round, status)
		}
	}
	for i, h := range a.headers() {
		if v := h.Get("Authorization"); v != testSecret && v != "" {
			t.Errorf("upstream request %d carried Authorization %q", i, v)
		}
	}
	if strings.Contains(logs.String(), "aster-test-secret") {
		t.Errorf("the log holds the secret:\n%s", logs.String())
	}
}

// Equal compares what decides a tunnel; Clear leaves none, with its reason
// in the refusal until the next Set.
func TestPolicyEqualAndClear(t *testing.T) {
	a, b := Rule{"a.test", 443}, Rule{"b.test", 443}
	mk := func() *Policy {
		return &Policy{Allow: []Rule{a, b}, MaxConns: 3, Addresses: loopbackAdmitted(a),
			Credentials: []Credential{{Rule: a, Header: "Authorization", Value: "v"}}}
	}
	if !mk().Equal(mk()) || (*Policy)(nil).Equal(mk()) || !(*Policy)(nil).Equal(nil) {
		t.Fatal("Equal of equal policies")
	}
	for name, change := range map[string]func(p *Policy){
		"allow":     func(p *Policy) { p.Allow = p.Allow[:1] },
		"cap":       func(p *Policy) { p.MaxConns = 4 },
		"addresses": func(p *Policy) { p.Addresses = loopbackAdmitted(b) },
		"value":     func(p *Policy) { p.Credentials[0].Value = "w" },
		"roots":     func(p *Policy) { p.Credentials[0].RootCAs = x509.NewCertPool() },
	} {
		p := mk()
		change(p)
		if p.Equal(mk()) {
			t.Errorf("a change of %s is not seen", name)
		}
	}
	sw := NewSwitch("s-clear")
	defer sw.Close()
	plain := &Policy{Allow: []Rule{a}}
	sw.Set("p", plain)
	if sw.Policy() != plain {
		t.Fatal("Policy is not the one in force")
	}
	sw.Clear("the operator removed profile p")
	if _, err := sw.DialEgress(t.Context(), "a.test", 443); KindOf(err) != KindNoProfile || !strings.Contains(err.Error(), "removed profile p") || sw.Profile() != "" {
		t.Fatalf("after Clear: %v %q", err, sw.Profile())
	}
	sw.Set("", nil)
	if _, err := sw.DialEgress(t.Context(), "a.test", 443); strings.Contains(err.Error(), "removed") {
		t.Fatalf("the reason outlived a Set: %v", err)
	}
}

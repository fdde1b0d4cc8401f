package egress

import (
	"errors"
	"io"
	"net"
	"net/netip"
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

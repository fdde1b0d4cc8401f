package securitytest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
)

// specialNames are allowed names that resolve into special-purpose ranges
// the relay used to dial (issue 35) and a few more of the registries.
var specialNames = map[string]string{
	"site-local.test": "fec0::1",
	"doc3fff.test":    "3fff::1",
	"orchid.test":     "2001:10::1",
	"orchid2.test":    "2001:20::1",
	"relay6to4.test":  "192.88.99.1",
	"srv6.test":       "5f00::1",
	"bench.test":      "198.18.0.1",
}

// mapResolver answers each name with its one address.
type mapResolver map[string]string

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := m[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// N8: a name on the allow list that resolves into a range the IANA
// special-purpose registries do not mark globally reachable is refused
// (403, the range named) and never dialled. The relay's dial is replaced by
// a recorder, so a broken filter fails this case without reaching any
// network.
func (s *suite) n8RelaySpecialPurposeRanges(t *testing.T) {
	pol := &egress.Policy{Resolver: mapResolver(specialNames)}
	var mu sync.Mutex
	var dialled []netip.AddrPort
	pol.Dial = func(_ context.Context, a netip.AddrPort) (*net.TCPConn, error) {
		mu.Lock()
		defer mu.Unlock()
		dialled = append(dialled, a)
		return nil, errors.New("this case dials nothing")
	}
	var prog strings.Builder
	prog.WriteString(rawConnect)
	for name := range specialNames {
		pol.Allow = append(pol.Allow, egress.Rule{Host: name, Port: 443})
		prog.WriteString("ask(" + pyQuote(name) + ", " + pyQuote("CONNECT "+name+":443 HTTP/1.1") + ")\n")
	}
	run := pol.NewRun(t.Name())
	spec := sandbox.Spec{Argv: []string{"python3", "-c", prog.String()}, Env: map[string]string{"REG_PORT": "0"},
		Limits: sandbox.Limits{TimeoutMS: 60000}, Egress: run}
	res := s.run(t, spec)
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	for name := range specialNames {
		if got[name] != "403" {
			t.Errorf("%s (%s): %q, want 403", name, specialNames[name], got[name])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialled) != 0 {
		t.Errorf("the relay dialled %v", dialled)
	}
	st := run.Stats()
	for _, c := range st.Conns {
		a := netip.MustParseAddr(specialNames[c.Host])
		if c.Refused == "" || !strings.Contains(c.Refused, "refused address") {
			t.Errorf("tunnel to %s (%s): %+v", c.Host, a, c)
		}
	}
	if st.Refused != len(specialNames) {
		t.Errorf("stats %+v, want %d refusals", st, len(specialNames))
	}
}

// pyQuote is s as a Python string literal (the names here are plain ASCII).
func pyQuote(s string) string { return "\"" + s + "\"" }

package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// Switch is the relay of a long-lived sandbox (a session): the policy the
// operator chose for it, which the operator may replace while it runs.
// Set ends the relay of the previous policy — every tunnel it opened is
// closed, so a narrowed policy holds at once — and the next tunnel is
// decided by the new one. Without a policy every tunnel is refused.
//
// A policy with credentials needs a Switch made by NewCredentialSwitch:
// its CA is the sandbox's for its whole life (the sandbox trusts it once,
// at its start), may sign only the hosts named then, and signs for a host
// only while the policy in force sends that host a credential.
type Switch struct {
	id string
	// ca shows the sandbox the credentialed hosts' certificates (nil: no
	// policy with credentials can be set).
	ca *runCA

	mu     sync.Mutex
	name   string
	run    *Run
	closed bool
	// why is the reason the sandbox has no policy, when the operator's
	// change took it away (Clear); "" otherwise.
	why string
}

// KindNoProfile is the kind of a tunnel a session asked for while it has
// no egress profile.
const KindNoProfile = "no egress profile"

// ErrSwitchCredentials refuses a policy with credentials for a Switch
// whose CA cannot sign for its hosts.
var ErrSwitchCredentials = errors.New("the session's certificate authority cannot sign for this profile's credentialed hosts")

// NewSwitch returns a Switch for the sandbox id with no policy; it takes
// no policy with credentials.
func NewSwitch(id string) *Switch { return &Switch{id: id} }

// NewCredentialSwitch returns a Switch for the sandbox id with no policy
// and a CA of its own, valid for lifetime, that may sign for hosts (the
// credentialed hosts of every policy the Switch may be given). The sandbox
// trusts CACertPEM for its whole life.
func NewCredentialSwitch(id string, hosts []string, lifetime time.Duration) (*Switch, error) {
	if len(hosts) == 0 {
		return NewSwitch(id), nil
	}
	ca, err := newRunCA(id, hosts, lifetime)
	if err != nil {
		return nil, err
	}
	return &Switch{id: id, ca: ca}, nil
}

// CACertPEM is the certificate of the Switch's CA (nil without one): what
// the sandbox trusts to reach a credentialed host. Its key stays here.
func (s *Switch) CACertPEM() []byte {
	if s.ca == nil {
		return nil
	}
	return append([]byte(nil), s.ca.certPEM...)
}

// Covers says the Switch can take p: p has no credential, or the Switch's
// CA may sign for every credentialed host of p. The error names the first
// host it cannot.
func (s *Switch) Covers(p *Policy) error {
	hosts := p.CredentialHosts()
	if len(hosts) == 0 {
		return nil
	}
	if s.ca == nil {
		return fmt.Errorf("%w (%s): the session was made when no profile sent credentials, so it has none", ErrSwitchCredentials, strings.Join(hosts, ", "))
	}
	for _, h := range hosts {
		if !slices.Contains(s.ca.cert.PermittedDNSDomains, h) {
			return fmt.Errorf("%w: %s was not a credentialed host when the session was made", ErrSwitchCredentials, h)
		}
	}
	return nil
}

// Set makes p, named name, the policy of the sandbox; a nil or empty p
// (name "") leaves it none. The previous policy's tunnels are closed, and
// with them every upstream connection that carried its credentials.
func (s *Switch) Set(name string, p *Policy) error {
	if err := s.Covers(p); err != nil {
		return err
	}
	var next *Run
	if p.Enabled() {
		next = p.newRun(s.id+"-"+printableID(name), s.ca)
	} else {
		name = ""
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if next != nil {
			next.Close()
		}
		return errors.New("the sandbox has ended")
	}
	prev := s.run
	s.name, s.run, s.why = name, next, ""
	s.mu.Unlock()
	if prev != nil {
		prev.Close()
	}
	return nil
}

// Clear leaves the sandbox no policy because of the operator's change
// said by why (shown to the sandbox with every refusal until the next
// Set); the previous policy's tunnels are closed.
func (s *Switch) Clear(why string) {
	s.mu.Lock()
	prev := s.run
	s.name, s.run = "", nil
	if !s.closed {
		s.why = why
	}
	s.mu.Unlock()
	if prev != nil {
		prev.Close()
	}
}

// Policy is the policy in force (nil for none).
func (s *Switch) Policy() *Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return nil
	}
	return s.run.policy
}

// Equal says p and q decide every tunnel alike: the same allow list,
// admitted addresses, caps and credentials (header, value and upstream
// roots). Resolvers, loggers and counters are not compared.
func (p *Policy) Equal(q *Policy) bool {
	if p == nil || q == nil {
		return p == q
	}
	if !slices.Equal(p.Allow, q.Allow) || p.MaxBytes != q.MaxBytes || p.MaxConns != q.MaxConns || p.ConnectTimeout != q.ConnectTimeout {
		return false
	}
	if len(p.Addresses) != len(q.Addresses) {
		return false
	}
	for r, pre := range p.Addresses {
		if !slices.Equal(pre, q.Addresses[r]) {
			return false
		}
	}
	return slices.EqualFunc(p.Credentials, q.Credentials, func(a, b Credential) bool {
		return a.Rule == b.Rule && a.Header == b.Header && a.Value == b.Value && a.RootCAs.Equal(b.RootCAs)
	})
}

// Profile is the name of the policy in force ("" for none).
func (s *Switch) Profile() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.name
}

// DialEgress decides a tunnel by the policy in force.
func (s *Switch) DialEgress(ctx context.Context, host string, port int) (net.Conn, error) {
	s.mu.Lock()
	run, closed, why := s.run, s.closed, s.why
	s.mu.Unlock()
	switch {
	case closed:
		return nil, refusedf(KindRunEnded, "the sandbox has ended: its relay opens no more tunnels")
	case run == nil && why != "":
		return nil, refusedf(KindNoProfile, "this session has no egress profile: %s", why)
	case run == nil:
		return nil, refusedf(KindNoProfile, "this session has no egress profile: the operator chooses one (PUT /v1/sessions/{id}/egress with a profile the token may use)")
	}
	return run.DialEgress(ctx, host, port)
}

// Stats are the tunnels of the policy in force (zero without one).
func (s *Switch) Stats() Stats {
	s.mu.Lock()
	run := s.run
	s.mu.Unlock()
	if run == nil {
		return Stats{}
	}
	return run.Stats()
}

// Close ends the Switch with its sandbox: its tunnels are closed and no
// other opens.
func (s *Switch) Close() {
	s.mu.Lock()
	run := s.run
	s.run, s.closed, s.name = nil, true, ""
	s.mu.Unlock()
	if run != nil {
		run.Close()
	}
}

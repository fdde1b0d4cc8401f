package egress

import (
	"context"
	"errors"
	"net"
	"sync"
)

// Switch is the relay of a long-lived sandbox (a session): the policy the
// operator chose for it, which the operator may replace while it runs.
// Set ends the relay of the previous policy — every tunnel it opened is
// closed, so a narrowed policy holds at once — and the next tunnel is
// decided by the new one. Without a policy every tunnel is refused.
//
// A Switch never holds a policy with credentials: the sandbox would have
// to trust a new run CA at every switch (the gap is in docs/sessions.md).
type Switch struct {
	id string

	mu     sync.Mutex
	name   string
	run    *Run
	closed bool
}

// KindNoProfile is the kind of a tunnel a session asked for while it has
// no egress profile.
const KindNoProfile = "no egress profile"

// ErrSwitchCredentials refuses a policy with credentials for a Switch.
var ErrSwitchCredentials = errors.New("a session's egress profile cannot inject credentials (egress.credentials is for the install phase of /v1/test only)")

// NewSwitch returns a Switch for the sandbox id with no policy.
func NewSwitch(id string) *Switch { return &Switch{id: id} }

// Set makes p, named name, the policy of the sandbox; a nil or empty p
// (name "") leaves it none. The previous policy's tunnels are closed.
func (s *Switch) Set(name string, p *Policy) error {
	if p != nil && len(p.Credentials) > 0 {
		return ErrSwitchCredentials
	}
	var next *Run
	if p.Enabled() {
		next = p.NewRun(s.id + "-" + printableID(name))
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
	s.name, s.run = name, next
	s.mu.Unlock()
	if prev != nil {
		prev.Close()
	}
	return nil
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
	run, closed := s.run, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return nil, refusedf(KindRunEnded, "the sandbox has ended: its relay opens no more tunnels")
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

// Package egress is the host side of a sandbox's only way out: the operator's
// allow list of hosts and the relay that opens, counts and logs each tunnel an
// install phase asks for through aster-init's CONNECT proxy.
//
// This file fixes the API that the sandbox runtimes and the two-phase test
// runner use; the relay itself (name checks, resolution, address refusals,
// caps, logging, metrics) lands with issue 14. Until then every tunnel is
// refused, so nothing gets out by accident.
package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Rule is one allowed destination: a host name and a port (443 by default).
type Rule struct {
	Host string
	Port int
}

// Policy is the operator's egress configuration. The zero Policy allows nothing.
type Policy struct {
	// Allow lists the destinations tunnels may reach; empty means none.
	Allow []Rule
	// MaxBytes caps the bytes (both directions) of one run's tunnels; 0 = default.
	MaxBytes int64
	// MaxConns caps the tunnels one run may open; 0 = default.
	MaxConns int
	// AllowAddr, when set, admits resolved addresses the relay refuses by
	// default (loopback, private). It is for tests that serve a registry on
	// loopback; no configuration file or flag can set it.
	AllowAddr func(netip.Addr) bool
}

// Enabled says the policy allows at least one destination.
func (p *Policy) Enabled() bool { return p != nil && len(p.Allow) > 0 }

// Conn is one tunnel as reported after a run.
type Conn struct {
	Host     string        `json:"host"`
	Port     int           `json:"port"`
	BytesIn  int64         `json:"bytes_in"`
	BytesOut int64         `json:"bytes_out"`
	Duration time.Duration `json:"duration_ns"`
	// Refused is why the tunnel was not opened; empty when it was.
	Refused string `json:"refused,omitempty"`
}

// Stats is what one run's tunnels did.
type Stats struct {
	Conns   []Conn `json:"conns"`
	Bytes   int64  `json:"bytes"`
	Refused int    `json:"refused"`
}

// Run is one run's relay; it implements sandbox.Dialer.
type Run struct {
	policy *Policy
	id     string
	mu     sync.Mutex
	stats  Stats
}

// NewRun returns the relay for one run.
func (p *Policy) NewRun(runID string) *Run { return &Run{policy: p, id: runID} }

// ErrNotImplemented is the refusal of every tunnel until the relay lands.
var ErrNotImplemented = errors.New("egress relay not implemented yet")

// DialEgress opens the host side of a tunnel to host:port.
func (r *Run) DialEgress(ctx context.Context, host string, port int) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Refused++
	r.stats.Conns = append(r.stats.Conns, Conn{Host: host, Port: port, Refused: ErrNotImplemented.Error()})
	return nil, ErrNotImplemented
}

// Stats returns a copy of what the run's tunnels did so far.
func (r *Run) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Conns = append([]Conn(nil), s.Conns...)
	return s
}

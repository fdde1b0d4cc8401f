package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/egress"
)

// Defaults of the egress relay (the `egress:` section of aster.yaml). The
// relay uses the same values for a Policy whose caps are left zero.
const (
	// DefaultEgressMaxBytes caps the bytes, both ways, of one run's tunnels.
	DefaultEgressMaxBytes = egress.DefaultMaxBytes
	// DefaultEgressMaxConnections caps the tunnels one run may open.
	DefaultEgressMaxConnections = egress.DefaultMaxConns
	// DefaultEgressConnectTimeout bounds resolving and connecting one tunnel.
	DefaultEgressConnectTimeout = egress.DefaultConnectTimeout
)

// EgressConfig is the `egress:` section of aster.yaml: the hosts an install
// phase may reach through the relay, and the per-run caps. Empty Allow (the
// default) means no way out at all.
type EgressConfig struct {
	// Allow lists "host[:port]" entries (port 443 when absent): exact host
	// names, never addresses.
	Allow []string `yaml:"allow"`
	// MaxBytes is a size ("2g"); empty is DefaultEgressMaxBytes.
	MaxBytes string `yaml:"max_bytes"`
	// MaxConnections is a count; empty is DefaultEgressMaxConnections.
	MaxConnections string `yaml:"max_connections"`
}

// EgressSection decodes the `egress:` section of c (absent: nothing allowed).
func (c Config) EgressSection() (EgressConfig, error) {
	var e EgressConfig
	err := c.decodeSection("egress", &e)
	return e, err
}

// EgressPolicy is the relay policy of c's `egress:` section with extra
// entries (the repeatable --egress-allow flag) added to its list. Every entry
// and cap is checked: a bad one is an error naming it, so a typo fails at
// start rather than refusing every tunnel later. The policy logs to log.
func (c Config) EgressPolicy(extra []string, log *slog.Logger) (*egress.Policy, error) {
	e, err := c.EgressSection()
	if err != nil {
		return nil, err
	}
	rules, err := egress.ParseAllow(append(append([]string(nil), e.Allow...), extra...))
	if err != nil {
		return nil, err
	}
	p := &egress.Policy{Allow: rules, MaxBytes: DefaultEgressMaxBytes, MaxConns: DefaultEgressMaxConnections,
		ConnectTimeout: DefaultEgressConnectTimeout, Logger: log, Counters: &egress.Counters{}}
	if s := strings.TrimSpace(e.MaxBytes); s != "" {
		n, err := ParseBytes(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("egress.max_bytes %q: want a positive size such as 2g", e.MaxBytes)
		}
		p.MaxBytes = n
	}
	if s := strings.TrimSpace(e.MaxConnections); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > 1_000_000 {
			return nil, fmt.Errorf("egress.max_connections %q: want a positive count", e.MaxConnections)
		}
		p.MaxConns = n
	}
	return p, nil
}

package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/units"
)

// Bounds of the MCP session settings: values outside them are refused at start.
const (
	maxMCPSessions       = 1 << 20
	minMCPSessionTimeout = time.Second
	maxMCPSessionTimeout = 24 * time.Hour
)

// envVars binds the ASTER_* variables of the `mcp:` section to the fields of m.
func (m *MCPConfig) envVars() []envVar {
	return []envVar{
		str("ASTER_MCP_MAX_SESSIONS", &m.MaxSessions, "`aster mcp --http` sessions open at once (default 1024)"),
		str("ASTER_MCP_MAX_SESSIONS_PER_TOKEN", &m.MaxSessionsPerToken, "of those, sessions one bearer token may hold (default 128)"),
		str("ASTER_MCP_SESSION_TIMEOUT", &m.SessionTimeout, "an `aster mcp --http` session idle this long is closed (default 30m)"),
	}
}

// MCPSection decodes the `mcp:` section of c (absent: all defaults) and
// applies the ASTER_* variables of envVars over it.
func (c Config) MCPSection(getenv func(string) string) (MCPConfig, error) {
	var m MCPConfig
	err := c.loadSection("mcp", &m, getenv)
	return m, err
}

// MCPSessions are the parsed session bounds of `aster mcp --http`.
type MCPSessions struct {
	// Max is the sessions open at once, whoever opened them.
	Max int
	// PerToken is the sessions one bearer token may hold (without tokens,
	// every client shares this cap).
	PerToken int
	// Timeout closes a session that has had no request for that long.
	Timeout time.Duration
}

// Sessions validates the session bounds of m; an empty field takes its default.
func (m MCPConfig) Sessions() (MCPSessions, error) {
	out := MCPSessions{Max: DefaultMCPMaxSessions, PerToken: DefaultMCPSessionsPerToken, Timeout: DefaultMCPSessionTimeout}
	var errs []error
	count := func(name, v string, dst *int) {
		v = strings.TrimSpace(v)
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxMCPSessions {
			errs = append(errs, fmt.Errorf("mcp %s %q: want a whole number from 1 to %d", name, v, maxMCPSessions))
			return
		}
		*dst = n
	}
	count("max_sessions", m.MaxSessions, &out.Max)
	count("max_sessions_per_token", m.MaxSessionsPerToken, &out.PerToken)
	if v := strings.TrimSpace(m.SessionTimeout); v != "" {
		d, err := units.ParseDuration(v)
		if err != nil || d < minMCPSessionTimeout || d > maxMCPSessionTimeout {
			errs = append(errs, fmt.Errorf("mcp session_timeout %q: want a duration from %s to %s", v, minMCPSessionTimeout, maxMCPSessionTimeout))
		} else {
			out.Timeout = d
		}
	}
	if len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	// A token's share above the whole is the whole: one token alone may
	// then fill the server, which is what the operator asked for.
	out.PerToken = min(out.PerToken, out.Max)
	return out, nil
}

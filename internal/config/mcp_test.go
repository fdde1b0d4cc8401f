package config

import (
	"strings"
	"testing"
	"time"
)

// SECURITY L7: the session bounds of `aster mcp --http` have defaults, come
// from the mcp: section and its ASTER_* variables, and refuse nonsense.
func TestMCPSessions(t *testing.T) {
	file := writeConfig(t, "mcp:\n  max_sessions: 50\n  session_timeout: 5m\n")
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	c, err := Load(file, getenv)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := c.MCPSection(getenv)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mc.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if want := (MCPSessions{Max: 50, PerToken: 50, Timeout: 5 * time.Minute}); got != want {
		t.Errorf("from the file: %+v, want %+v (the per-token default capped by the total)", got, want)
	}
	env["ASTER_MCP_MAX_SESSIONS_PER_TOKEN"] = "8"
	env["ASTER_MCP_SESSION_TIMEOUT"] = "90s"
	if mc, err = c.MCPSection(getenv); err != nil {
		t.Fatal(err)
	}
	if got, err = mc.Sessions(); err != nil || got != (MCPSessions{Max: 50, PerToken: 8, Timeout: 90 * time.Second}) {
		t.Errorf("with the variables: %+v %v", got, err)
	}
	if got, err = (MCPConfig{}).Sessions(); err != nil ||
		got != (MCPSessions{Max: DefaultMCPMaxSessions, PerToken: DefaultMCPSessionsPerToken, Timeout: DefaultMCPSessionTimeout}) {
		t.Errorf("defaults: %+v %v", got, err)
	}
	for _, bad := range []MCPConfig{{MaxSessions: "0"}, {MaxSessions: "x"}, {MaxSessionsPerToken: "-1"}, {SessionTimeout: "10ms"}, {SessionTimeout: "1000h"}} {
		if _, err := bad.Sessions(); err == nil || !strings.Contains(err.Error(), "mcp ") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

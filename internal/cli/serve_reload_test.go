package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
)

// SIGHUP re-reads egress.profiles (value_files too): a good file replaces
// the set of a running server, a bad one leaves it and the log says why.
// The set is read back from the 400 of an unknown profile, which lists it.
func TestServeReloadProfiles(t *testing.T) {
	needEngine(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "aster.yaml")
	token := filepath.Join(dir, "token")
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cfg, "egress:\n  profiles:\n    first: {allow: [a.example]}\n")
	p := startServe(t, nil, "--config", cfg)
	profilesSay := func(want string) {
		t.Helper()
		eventually(t, 30*time.Second, "the profiles "+want, func() bool {
			code, _, body, err := p.post(context.Background(), api.RouteSessions, api.SessionRequest{EgressProfile: "nope"})
			return err == nil && code == 400 && strings.Contains(string(body), want)
		})
	}
	profilesSay("it has first")

	write(token, "Bearer reload-secret-0123\n")
	write(cfg, "egress:\n  profiles:\n    first: {allow: [a.example]}\n    second:\n      allow: [b.example]\n"+
		"      credentials: [{host: b.example, header: Authorization, value_file: "+token+"}]\n")
	if err := p.proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	profilesSay("it has first, second")
	eventually(t, 10*time.Second, "the reload's log line", func() bool { return strings.Contains(p.logs.String(), "egress profiles reloaded") })

	// A value_file gone: not reloaded, the set in force stays.
	os.Remove(token)
	write(cfg, "egress:\n  profiles:\n    third: {allow: [c.example], credentials: [{host: c.example, header: Authorization, value_file: "+token+"}]}\n")
	if err := p.proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the refusal's log line", func() bool {
		return strings.Contains(p.logs.String(), "egress profiles not reloaded") && strings.Contains(p.logs.String(), "egress.profiles.third.credentials entry c.example:443: value_file")
	})
	profilesSay("it has first, second")
	if strings.Contains(p.logs.String(), "reload-secret") {
		t.Error("the log holds the credential")
	}
}

package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// aster-init starts in every sandbox (and again as the trampoline of a session's execs),
// and each start runs the initialisation of every package linked into it: the
// orchestrator's packages (the API, net/http, TLS, x509, slog) cost a cold start
// several milliseconds of CPU for nothing. aster-init links only what it uses.
func TestInitLinksLittle(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read the import graph: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", module+"/cmd/aster-init").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		module + "/cmd/aster-init":             true,
		module + "/internal/initproto":         true,
		module + "/internal/textclip":          true,
		module + "/internal/cgroupstat":        true,
		module + "/internal/workspace":         true,
		module + "/internal/sandbox/hardening": true,
	}
	forbidden := []string{"net/http", "crypto/tls", "crypto/x509", "log/slog", "regexp"}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps gave %d packages: %q", len(deps), out)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, module+"/") && !allowed[d] {
			t.Errorf("aster-init links %s: keep what aster-init needs in a package it may link (list it here with why)", d)
		}
		for _, f := range forbidden {
			if d == f {
				t.Errorf("aster-init links %s", d)
			}
		}
	}
}

package client

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/testkit"
)

// TestOutsideModule builds examples/go-client, a module of its own that can
// import only the public packages, and runs it against a real server over
// the real engine: what a project outside this repository gets.
func TestOutsideModule(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build the example module")
	}
	const token = "outside-module-token-0123456789"
	tokens, err := sandboxapi.ParseTokens(strings.NewReader(token + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	url, _ := server(t, 2, 4, tokens)
	dir := t.TempDir()
	bin := filepath.Join(dir, "aster-client-example")
	build := exec.CommandContext(t.Context(), goBin, "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "examples", "go-client")
	// The example resolves github.com/asterhq/aster through its replace
	// directive, as a fork or a vendored copy would, never a download.
	build.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example module: %v\n%s", err, out)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		return testkit.Run(t, cmd)
	}
	if code, out, errOut := run("-server", url, "-token-file", tokenFile, "print(6 * 7)"); code != 0 || out != "42\n" || !strings.Contains(errOut, ": ok in ") {
		t.Errorf("snippet: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := run("-server", url, "-token-file", tokenFile, "import sys; sys.exit(7)"); code != 7 || !strings.Contains(errOut, "exit_nonzero") {
		t.Errorf("failing snippet: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run("-server", url, "print(1)"); code != 2 || !strings.Contains(errOut, "401 unauthorized") {
		t.Errorf("no token: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run("-server", url, "-token-file", tokenFile, "-memory", "lots", "print(1)"); code != 2 || !strings.Contains(errOut, "limits.memory") {
		t.Errorf("bad limit: exit %d, stderr %q", code, errOut)
	}
}

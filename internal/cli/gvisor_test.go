package cli

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestGVisorPlatformFlag: an unknown platform is a usage error before
// anything starts.
func TestGVisorPlatformFlag(t *testing.T) {
	code, _, stderr := run(t, "--runtime", "gvisor", "--gvisor-platform", "vmware", "exec", "--", "true")
	if code != ExitUsage || !strings.Contains(stderr, "--gvisor-platform") || !strings.Contains(stderr, "systrap, ptrace, kvm") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestExecOnGVisor: `aster --runtime gvisor exec` runs the job on gVisor's
// kernel and says so in the result.
func TestExecOnGVisor(t *testing.T) {
	if testing.Short() {
		t.Skip("a real gVisor sandbox")
	}
	ocitest.GVisor(t) // skips (fails with ASTER_REQUIRE_GVISOR=1) where runsc cannot run
	state := t.TempDir()
	t.Cleanup(func() { ocitest.RemoveState(state) })
	env := map[string]string{"ASTER_OCI_STATE_DIR": state, "ASTER_OCI_CACHE_DIR": ocitest.CacheDir(), "ASTER_GVISOR_RUNSC": ocitest.GVisorBinary()}
	code, stdout, stderr := runCLI(t, env, "--runtime", "gvisor", "--init-path", sandboxtest.InitBinary(t), "exec", "--json", "--", "uname", "-r")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	var res struct{ Status, Runtime, Stdout string }
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	host, err := exec.CommandContext(t.Context(), "uname", "-r").Output()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "ok" || res.Runtime != "gvisor" || res.Stdout == "" || res.Stdout == string(host) {
		t.Fatalf("result %+v (host kernel %s)", res, host)
	}
}

package microvm_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/microvm"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// shared is the runtime every test of this package uses (booting under TCG
// costs seconds; the runtime itself is cheap, its caches are shared).
func manager(t *testing.T, rt *microvm.Runtime, n int) *sandbox.Manager {
	t.Helper()
	return sandboxtest.Manager(t, rt, n)
}

func run(t *testing.T, mgr *sandbox.Manager, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	if spec.Image == "" {
		spec.Image = sandboxtest.Image()
	}
	res, err := mgr.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("run %q: %v (result %+v)", spec.Argv, err, res)
	}
	return res
}

// TestRunCommand runs one command in a VM: its output, its exit code, the
// workspace and stdin, the timings of a boot.
func TestRunCommand(t *testing.T) {
	rt := microvmtest.Runtime(t)
	mgr := manager(t, rt, 2)
	res := run(t, mgr, sandbox.Spec{
		Argv:      []string{"sh", "-c", "cat /work/in.txt; read x; echo \"stdin=$x\"; id -u; echo err >&2; exit 3"},
		Workspace: sandbox.Workspace{Files: map[string][]byte{"in.txt": []byte("from the workspace\n")}},
		Stdin:     strings.NewReader("hello\n"),
		Limits:    sandbox.Limits{TimeoutMS: 30_000},
	})
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 3 {
		t.Fatalf("status %s exit %d, want exit_nonzero 3 (%s)", res.Status, res.ExitCode, res.Error)
	}
	if got, want := string(res.Stdout.Data), "from the workspace\nstdin=hello\n1000\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got := string(res.Stderr.Data); got != "err\n" {
		t.Errorf("stderr %q", got)
	}
	if res.Runtime != "microvm" {
		t.Errorf("runtime %q", res.Runtime)
	}
	t.Logf("accel %s, timings %v", rt.Accel(), res.Timings)
}

// TestGuestKernelIsNotTheHosts: uname -r and /proc/version inside are the
// guest kernel's, not the host's.
func TestGuestKernelIsNotTheHosts(t *testing.T) {
	rt := microvmtest.Runtime(t)
	mgr := manager(t, rt, 1)
	res := run(t, mgr, sandbox.Spec{Argv: []string{"sh", "-c", "uname -r; cat /proc/version"}, Limits: sandbox.Limits{TimeoutMS: 30_000}})
	if res.Status != sandbox.StatusOK {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	lines := strings.SplitN(string(res.Stdout.Data), "\n", 2)
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	host := unix.ByteSliceToString(u.Release[:])
	hostVersion, err := os.ReadFile("/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	if lines[0] != rt.GuestRelease() {
		t.Errorf("uname -r inside %q, want the guest's %q", lines[0], rt.GuestRelease())
	}
	if lines[0] == host {
		t.Errorf("uname -r inside is the host's %q", host)
	}
	if len(lines) < 2 || strings.TrimSpace(lines[1]) == strings.TrimSpace(string(hostVersion)) || !strings.Contains(lines[1], rt.GuestRelease()) {
		t.Errorf("/proc/version inside %q; host's %q", lines[1], hostVersion)
	}
}

var _ = config.DefaultLimits
var _ = context.Background
var _ = time.Second

package kubernetes_test

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/kubernetes/kubetest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

func TestRunHello(t *testing.T) {
	rt := kubetest.Runtime(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	res, err := mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"sh", "-c", "echo hello; echo err >&2; id; grep -E 'Cap|NoNew|Seccomp' /proc/self/status; ls /sys/class/net; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res.Wire())
	if res.Status != sandbox.StatusExitNonzero || res.ExitCode != 3 {
		t.Fatalf("status %s exit %d", res.Status, res.ExitCode)
	}
}

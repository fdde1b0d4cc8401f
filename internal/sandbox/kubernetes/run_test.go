package kubernetes_test

import (
	"context"
	"fmt"
	"sync"
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

// TestManyShortRuns: attach can drop what a container writes just after its
// stdin is connected or just before it exits (about 1 run in 15 with a naive
// attach here); with the hello exchange and aster-init's linger, no run loses
// its output or its result.
func TestManyShortRuns(t *testing.T) {
	rt := kubetest.Runtime(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan string, n)
	l := sandbox.Limits{MilliCPUs: 200}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("run %d\n", i)
			res, err := mgr.Run(context.Background(), sandbox.Spec{Argv: []string{"echo", "run", fmt.Sprint(i)}, Limits: l})
			if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout.Data) != want {
				errs <- fmt.Sprintf("run %d: %v %s %q %s", i, err, res.Status, res.Stdout.Data, res.Error)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

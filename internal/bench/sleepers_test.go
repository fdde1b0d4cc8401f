package bench

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// The sandbox side of an oci run is the orchestrator's descendants: a child of this
// test process is counted, with its resident and proportional memory.
func TestSandboxSideCountsDescendants(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Right after its exec the child may not be resident yet: wait until the kernel
	// says it is, then count.
	deadline := time.Now().Add(10 * time.Second)
	for processTable()[cmd.Process.Pid].rss == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	m := sandboxSide("oci", os.Getpid())
	if m.procs < 1 || m.rss <= 0 {
		t.Fatalf("descendants %+v, want the sleep child with its RSS", m)
	}
	if pssOf(cmd.Process.Pid) <= 0 || m.pss <= 0 || m.pss > m.rss {
		t.Errorf("PSS %d of %+v: want above 0 and at most the RSS", pssOf(cmd.Process.Pid), m)
	}
	if memoryCgroup(os.Getpid()) == "" {
		t.Errorf("no memory cgroup read for this process")
	}
}

package main_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// BenchmarkAsterExecTrue is the cost of one `aster exec -- true` as a user sees
// it: process start, a fresh hardened sandbox, the job, teardown.
func BenchmarkAsterExecTrue(b *testing.B) {
	sandboxtest.Docker(b)
	env := append(os.Environ(), "ASTER_INIT_PATH="+sandboxtest.InitBinary(b), "ASTER_LABELS=aster.test=bench")
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(asterBin, "exec", "--", "true")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// BenchmarkDockerRunRmTrue is the same job through a plain `docker run --rm`
// with no hardening flags at all, on the same engine and image: the baseline.
func BenchmarkDockerRunRmTrue(b *testing.B) {
	sandboxtest.Docker(b)
	if _, err := exec.LookPath("docker"); err != nil {
		b.Skip("no docker CLI")
	}
	for b.Loop() {
		cmd := exec.Command("docker", "run", "--rm", "--network", "none", "--label", "aster.test=bench", sandboxtest.Image(), "true")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

package docker_test

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

func TestSessions(t *testing.T) {
	sandboxtest.SessionSuite(t, sandboxtest.Docker(t))
}

func BenchmarkSessionExecTrue(b *testing.B) {
	sandboxtest.BenchSessionExec(b, sandboxtest.Docker(b))
}

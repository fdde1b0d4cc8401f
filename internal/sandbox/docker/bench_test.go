package docker_test

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// BenchmarkManagerRunTrue is one cold sandbox run of `true` through the
// Manager (create, attach, start, job, remove), without process start-up.
func BenchmarkManagerRunTrue(b *testing.B) {
	rt := sandboxtest.Docker(b)
	m := sandboxtest.Manager(b, rt, 1)
	for b.Loop() {
		res, err := m.Run(b.Context(), sandbox.Spec{Argv: []string{"true"}})
		if err != nil || res.Status != sandbox.StatusOK {
			b.Fatalf("%v %+v", err, res.Wire())
		}
	}
}

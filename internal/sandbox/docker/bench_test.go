package docker_test

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandbox/securitytest"
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

// BenchmarkRelay is a 64 MiB HTTPS download through the egress relay, and
// a 64 MiB export of /work, on Docker.
func BenchmarkRelay(b *testing.B) {
	rt := sandboxtest.Docker(b)
	securitytest.BenchmarkRelay(b, sandboxtest.Manager(b, rt, 1), sandboxtest.Image())
}

package oci_test

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandbox/securitytest"
)

// BenchmarkRelay is a 64 MiB HTTPS download through the egress relay, and
// a 64 MiB export of /work, on the oci runtime.
func BenchmarkRelay(b *testing.B) {
	rt := ocitest.New(b, ocitest.Options(b))
	securitytest.BenchmarkRelay(b, sandboxtest.Manager(b, rt, 1), sandboxtest.Image())
}

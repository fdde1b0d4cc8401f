package oci_test

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox/oci"

	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

func TestSessions(t *testing.T) {
	sandboxtest.SessionSuite(t, ocitest.Runtime(t))
}

// TestSessionsGVisor: sessions on gVisor's runsc, each exec a `runsc exec`.
// An OOM kill ends the whole sandbox there (the host's OOM killer ends the
// sentry), so the session with it.
func TestSessionsGVisor(t *testing.T) {
	sandboxtest.SessionSuiteWith(t, ocitest.GVisor(t), sandboxtest.SessionSuiteOptions{WholeSandboxOOM: true})
}

// BenchmarkSessionExecTrue: an exec of `true` over the holder's exec
// channel (channel) and as a `crun exec` of a further aster-init
// (runtime-exec), each against a cold one-shot run, in one run.
func BenchmarkSessionExecTrue(b *testing.B) {
	b.Run("channel", func(b *testing.B) {
		sandboxtest.BenchSessionExec(b, ocitest.Runtime(b))
	})
	b.Run("runtime-exec", func(b *testing.B) {
		sandboxtest.BenchSessionExec(b, ocitest.New(b, runtimeExecs(ocitest.Options(b))))
	})
}

func runtimeExecs(o oci.Options) oci.Options {
	o.SessionRuntimeExecs = true
	return o
}

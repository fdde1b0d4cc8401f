package oci_test

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestSessionChannels: what the holder serving execs over channels of its
// own streams adds (SECURITY.md Q15): sandboxtest.SessionChannelSuite.
func TestSessionChannels(t *testing.T) {
	sandboxtest.SessionChannelSuite(t, ocitest.Runtime(t), sandboxtest.SessionChannelOptions{})
}

// TestSessionChannelsGVisor: the same on gVisor, whose holder serves execs
// over the same channels. Its /proc/PID/status shows no ambient set.
func TestSessionChannelsGVisor(t *testing.T) {
	sandboxtest.SessionChannelSuite(t, ocitest.GVisor(t), sandboxtest.SessionChannelOptions{NoAmbientSet: true})
}

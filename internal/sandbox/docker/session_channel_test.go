package docker_test

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestSessionChannels: the Docker holder serves a session's commands over
// channels of its attach stream, as the oci holder does over its stdio
// (SECURITY.md Q15): sandboxtest.SessionChannelSuite.
func TestSessionChannels(t *testing.T) {
	sandboxtest.SessionChannelSuite(t, sandboxtest.Docker(t), sandboxtest.SessionChannelOptions{})
}

package microvm

import "github.com/asterhq/aster/internal/sandbox"

// QEMUPid is the pid of an instance's QEMU (tests).
func QEMUPid(i sandbox.Instance) int { return i.(*instance).proc.Pid }

// DropHost closes the host's end of the port without touching QEMU, as a
// killed orchestrator does (tests).
func DropHost(i sandbox.Instance) { i.(*instance).conn.Close() }

package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Every sandbox of a runtime on this host costs host tasks (processes and
// threads): on crun and runc one per task of the job, on gVisor many more,
// as its kernel (the sentry) needs host threads for each application task.
// The host has one supply of them for everything it runs: past
// kernel.threads-max no thread can be created, past kernel.pid_max no task
// gets an id, and then every fork on the host fails, the host's own daemons'
// and Aster's included. A per-sandbox pids cgroup alone does not stop that:
// enough sandboxes, each within its bound, exhaust the host together. So the
// Manager holds a host task budget and charges each sandbox the most its
// runtime lets it create (HostTaskCharger); a run whose charge does not fit
// waits in the queue like one without a free slot. The runtime sets the
// sandbox's host pids cgroup to its charge, so no sandbox can take more than
// it was charged.

// HostTaskCharger is implemented by a Runtime whose sandboxes are tasks of
// this host (oci: crun, runc and gVisor's runsc). A Runtime that does not
// implement it is charged nothing.
type HostTaskCharger interface {
	// HostTasks is the most host tasks a sandbox with limits l can create,
	// the runtime's own process for it included. The runtime bounds the
	// sandbox to it.
	HostTasks(l Limits) int64
}

// The host task limits Aster reads.
const (
	threadsMaxPath = "/proc/sys/kernel/threads-max"
	pidMaxPath     = "/proc/sys/kernel/pid_max"
)

// HostTaskReserveShare is the part of the host's task limit the default
// budget leaves to everything that is not a sandbox (one quarter, and at
// least HostTaskReserveMin tasks): the host's daemons, Aster's own threads,
// other users.
const (
	HostTaskReserveShare = 4 // one part in four
	HostTaskReserveMin   = 4096
)

// HostTaskLimit is the number of tasks this host can hold: the lower of
// kernel.threads-max and kernel.pid_max.
func HostTaskLimit() (int64, error) {
	threads, err := readSysctlInt(threadsMaxPath)
	if err != nil {
		return 0, err
	}
	pids, err := readSysctlInt(pidMaxPath)
	if err != nil {
		return 0, err
	}
	return min(threads, pids), nil
}

// HostTaskBudget is the default host task budget: HostTaskLimit less the
// reserve (HostTaskReserveShare, HostTaskReserveMin).
func HostTaskBudget() (int64, error) {
	limit, err := HostTaskLimit()
	if err != nil {
		return 0, err
	}
	return BudgetForHostTasks(limit), nil
}

// BudgetForHostTasks is the budget that leaves the reserve of a host that
// can hold limit tasks (at least 1).
func BudgetForHostTasks(limit int64) int64 {
	return max(limit-max(limit/HostTaskReserveShare, HostTaskReserveMin), 1)
}

func readSysctlInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("host task limit: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("host task limit: %s: %q is not a positive number", path, strings.TrimSpace(string(b)))
	}
	return n, nil
}

// hostTasks is what the Manager's runtime charges a sandbox with limits l
// (0 when it charges nothing).
func (m *Manager) hostTasks(l Limits) int64 {
	if m.charger == nil {
		return 0
	}
	return m.charger.HostTasks(l)
}

// checkHostTasks refuses limits whose charge exceeds the whole budget: such
// a run could never be admitted, however long it waited.
func (m *Manager) checkHostTasks(l Limits) error {
	if m.charger == nil {
		return nil
	}
	if n := m.charger.HostTasks(l); n > m.opts.HostTasks {
		return Invalidf("pids %d costs up to %d host tasks on the %s runtime, more than the whole host task budget of %d; ask for fewer pids",
			l.Pids, n, m.opts.Runtime.Name(), m.opts.HostTasks)
	}
	return nil
}

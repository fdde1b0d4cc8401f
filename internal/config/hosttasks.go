package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/sandbox"
)

// MinHostTasks is the smallest host task budget host_tasks accepts: one
// crun sandbox at the smallest pids limit and its runtime process.
const MinHostTasks = 64

// HostTaskBudget parses host_tasks: the host tasks the sandboxes of a
// runtime on this host may create together (sandbox.ManagerOptions.HostTasks).
// 0 for "auto" or empty: the Manager then takes what the host affords,
// min(kernel.threads-max, kernel.pid_max) less a quarter for the host
// (sandbox.HostTaskBudget).
func (c Config) HostTaskBudget() (int64, error) {
	v := strings.TrimSpace(c.HostTasks)
	if v == "" || v == "auto" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < MinHostTasks {
		return 0, fmt.Errorf("host_tasks %q: want a whole number of at least %d, or auto", v, MinHostTasks)
	}
	if limit, err := sandbox.HostTaskLimit(); err == nil && n > limit {
		return 0, fmt.Errorf("host_tasks %d is more than this host can hold (%d: the lower of kernel.threads-max and kernel.pid_max)", n, limit)
	}
	return n, nil
}

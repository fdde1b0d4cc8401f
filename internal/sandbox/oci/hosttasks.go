package oci

import (
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// runtimeProcessTasks is what a sandbox costs the host outside its own
// cgroup: the runtime binary's process that started it and waits for it.
// `crun run` is one task; `runsc run` and `runc run` are Go programs, whose
// threads grow with the CPUs they may use (5 or 6 measured for runsc on two
// CPUs, beside a fork bomb inside). The job cannot make it grow: it runs
// none of the job's code.
const runtimeProcessTasks = 32

// sandboxPids is the pids limit of a sandbox's host cgroup, where all of its
// host tasks live: the job's pids limit on crun and runc, the bound of the
// whole sandbox on gVisor (runtimekit.GVisorTaskLimits).
func (r *Runtime) sandboxPids(l sandbox.Limits) int64 {
	if r.kind != "runsc" {
		return l.Pids
	}
	if n := r.opts.gvisorHostTasks; n > 0 {
		return n // a test of what happens at the bound
	}
	_, host := runtimekit.GVisorTaskLimits(l.Pids, r.gvisor.Platform)
	return host
}

// HostTasks implements sandbox.HostTaskCharger: the sandbox's cgroup bound
// plus the runtime's own process. The Manager charges it against the host
// task budget.
func (r *Runtime) HostTasks(l sandbox.Limits) int64 {
	return r.sandboxPids(l) + runtimeProcessTasks
}

var _ sandbox.HostTaskCharger = (*Runtime)(nil)

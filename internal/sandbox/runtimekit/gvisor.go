package runtimekit

// Under gVisor a sandbox's processes are tasks of gVisor's own kernel (the
// sentry), and each application thread also costs the sentry host threads
// for the platform's stubs. A host pids cgroup at the job's limit is
// therefore reached by the sentry itself, which then panics ("failed to get
// clone"): the whole sandbox dies instead of the job's fork failing. So on
// gVisor the job's limit is enforced inside gVisor's kernel, as RLIMIT_NPROC
// of the job's uid (gVisor counts every task of a uid against it, threads
// included, like Linux), and the host cgroup is a bound on the sandbox as a
// whole, well above what the job's own limit lets the sentry use.

// gvisorHostTasksPerPid is how many host tasks the host pids cgroup allows
// per task the job may have, by gVisor platform. Measured with a shell fork
// bomb at the default 128: systrap peaked at 325 host tasks (about 2.5 per
// job task), ptrace at about 2,400 (a traced stub thread per application
// process and sentry thread). Under load ptrace takes more: at pids 64,
// beside the rest of the security suite and stress-ng, 2,242 host tasks
// (35 per job task, 88% of a bound of 32 per task plus 512), and a loaded CI
// run lost a fork-bombed sandbox without a result, as a sentry that cannot
// clone does. ptrace gets twice that. Unknown platforms get ptrace's.
var gvisorHostTasksPerPid = map[string]int64{"systrap": 4, "ptrace": 64, "kvm": 4}

// gvisorHostTasks is added for the sentry's and the gofer's own threads.
// The bound, with the runtime's own process, is also what the Manager charges
// such a sandbox of the host task budget (hosttasks.go): the cgroup makes the
// charge a ceiling the sandbox cannot pass.
const gvisorHostTasks = 512

// GVisorTaskLimits returns, for a run's pids limit on the gVisor platform
// named (empty when unknown), the RLIMIT_NPROC of the job's uid and the
// host pids cgroup limit of the whole sandbox. The job gets one task less
// than pids: aster-init, under a uid of its own, is the other.
func GVisorTaskLimits(pids int64, platform string) (nproc, hostPids int64) {
	per, ok := gvisorHostTasksPerPid[platform]
	if !ok {
		per = gvisorHostTasksPerPid["ptrace"]
	}
	return max(pids-1, 1), per*pids + gvisorHostTasks
}

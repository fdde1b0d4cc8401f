package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/workspace"
)

// HostGrace is how long past a job's own timeout the host waits for aster-init
// to report before it destroys the sandbox itself.
const HostGrace = 5 * time.Second

// KillGrace is how long a job has between SIGTERM and SIGKILL at its deadline.
const KillGrace = 500 * time.Millisecond

// JobHeader builds and validates the header aster-init will act on: the
// Manager checks a spec with it before anything starts, and the runtimes'
// Session sends it.
func JobHeader(job Job) (initproto.JobHeader, error) {
	dir := "."
	// "/work" itself, as the docs name the default, is the workspace root.
	if job.Workdir != "" && job.Workdir != "/work" && job.Workdir != "/work/" {
		rel, err := workspace.CleanName(strings.TrimPrefix(job.Workdir, "/work/"))
		if err != nil {
			return initproto.JobHeader{}, Invalidf("workdir: %v", err)
		}
		dir = rel
	}
	env := make([]string, 0, len(job.Env))
	for _, k := range slices.Sorted(maps.Keys(job.Env)) {
		env = append(env, k+"="+job.Env[k])
	}
	hdr := initproto.JobHeader{
		Version:            initproto.Version,
		Argv:               job.Argv,
		Env:                env,
		Dir:                dir,
		TimeoutMS:          job.Limits.TimeoutMS,
		KillGraceMS:        KillGrace.Milliseconds(),
		OutputCeilingBytes: job.Limits.OutputCeilingBytes,
		Workspace:          job.Workspace.Tar != nil || len(job.Workspace.Files) > 0,
		WorkspaceMaxBytes:  job.Limits.WorkdirBytes,
		WorkspaceMaxFiles:  workspace.DefaultMaxFiles,
		Stdin:              job.Stdin != nil,
		Export:             job.Export != nil,
	}
	if job.Egress != nil {
		hdr.EgressPort = EgressProxyPort
		if job.EgressPort != 0 {
			hdr.EgressPort = job.EgressPort
		}
	}
	if job.Terminal != nil {
		size := job.Terminal.Size
		hdr.PTY = &size
	}
	if err := checkJobSize(hdr); err != nil {
		return hdr, err
	}
	if err := hdr.Validate(); err != nil {
		return hdr, Invalidf("%v", err)
	}
	return hdr, nil
}

// SignalName names a signal number the way people write it ("SIGKILL").
func SignalName(n int) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL",
		syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
		syscall.SIGKILL: "SIGKILL", syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM", syscall.SIGXCPU: "SIGXCPU",
		syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
	}
	if s, ok := names[syscall.Signal(n)]; ok {
		return s
	}
	return fmt.Sprintf("SIG%d", n)
}

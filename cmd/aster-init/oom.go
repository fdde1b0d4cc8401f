package main

import (
	"os"
	"syscall"
	"unsafe"

	"github.com/asterhq/aster/internal/sandbox/hardening"
)

// execJobFlag marks the job trampoline: init forks itself with it, and the
// child raises its own OOM score, then executes the job in place. Every job
// process inherits the score, so under memory pressure the kernel's OOM
// killer takes the job's processes, never init, while any of them lives. The
// child writes its own score because init itself is not dumpable, and so
// cannot write /proc/PID/oom_score_adj of another process, nor open its own.
// A one-shot init normally needs no trampoline (see directStart); a session's
// holder, a microVM guest and an init that could not open its own score at
// start still use it.
const execJobFlag = "-exec-job"

// execJobSeccompFlag is execJobFlag for a job that no container runtime
// confines (the microvm guest): the trampoline also installs Aster's seccomp
// profile, compiled for the running kernel (hardening.SeccompFilter), on
// itself right before it executes the job, and refuses to run the job when
// it cannot.
const execJobSeccompFlag = "-exec-job-seccomp"

// jobOOMScore is the highest oom_score_adj: the first to go.
const jobOOMScore = "1000"

// trampolineArgv is what init forks to run argv0 with argv.
func trampolineArgv(argv0 string, argv []string, seccomp bool) []string {
	flag := execJobFlag
	if seccomp {
		flag = execJobSeccompFlag
	}
	return append([]string{"aster-init", flag, argv0}, argv...)
}

// selfExe is the path init forks for the trampoline.
const selfExe = "/proc/self/exe"

// runTrampoline is the child's side: it never returns.
func runTrampoline(args []string, seccomp bool) {
	if len(args) < 2 {
		logf("%s: no command", execJobFlag)
		os.Exit(126)
	}
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte(jobOOMScore), 0); err != nil {
		logf("raise the job's OOM score: %v", err)
	}
	defaultSignals()
	if seccomp {
		// Last, so that nothing above runs under the filter; the job is never
		// started without it.
		f, err := hardening.SeccompFilter()
		if err == nil {
			err = hardening.InstallSeccomp(f)
		}
		if err != nil {
			logf("%v: the job is not started", err)
			os.Exit(126)
		}
	}
	err := syscall.Exec(args[0], args[1:], os.Environ())
	logf("exec %s: %v", args[1], err)
	if err == syscall.ENOENT {
		os.Exit(127)
	}
	os.Exit(126)
}

// kernelSigaction is the kernel's struct sigaction (x86_64 and arm64 alike).
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// defaultSignals gives every signal its default disposition. init ignores
// nearly all of them, and an ignored signal stays ignored across fork and
// exec: without this the job would start deaf to SIGTERM, SIGHUP or SIGPIPE.
func defaultSignals() {
	var sa kernelSigaction // handler 0 is SIG_DFL
	for n := uintptr(1); n <= 64; n++ {
		if n == uintptr(syscall.SIGKILL) || n == uintptr(syscall.SIGSTOP) {
			continue
		}
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, n, uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0)
	}
}

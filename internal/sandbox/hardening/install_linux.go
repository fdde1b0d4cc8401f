package hardening

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SeccompFilter is the profile (SeccompOCI) compiled for this machine: the
// same rules a container runtime applies, for a process that applies them
// itself (InstallSeccomp). The profile depends on the running kernel's
// version, so a guest compiles its own.
func SeccompFilter() (Filter, error) {
	p, err := SeccompOCI()
	if err != nil {
		return nil, err
	}
	return CompileSeccomp(p)
}

// InstallSeccomp sets no_new_privs and installs f on every thread of the
// calling process (SECCOMP_FILTER_FLAG_TSYNC), so that what the process
// executes next runs under it. A process without CAP_SYS_ADMIN may do so
// only with no_new_privs, which also keeps setuid binaries from gaining
// privileges. It fails rather than leave any thread unfiltered.
func InstallSeccomp(f Filter) error {
	if len(f) == 0 || len(f) > maxProgram {
		return fmt.Errorf("seccomp: program of %d instructions", len(f))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(f)
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronized", r)
	}
	return nil
}

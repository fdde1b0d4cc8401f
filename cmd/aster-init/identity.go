package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// identity is who init and the job run as. When they differ the job cannot
// reach init at all: no signal, ptrace or prlimit from one uid to another
// without capabilities, and the job has none.
//
// The runtime starts init either as root (Docker gives a non-root user no
// effective capabilities) or as the init uid, in both cases with exactly
// CAP_SETUID, CAP_SETGID and CAP_SETPCAP. Before it reads anything from the
// host, init becomes the init uid, keeping those three; it empties the
// bounding set so that nothing it starts can ever regain a capability; it
// forks the job under the job uid; then it drops every capability for good.
type identity struct {
	init, job int
	// separate says the job runs under its own uid. False when the runtime
	// gave init no way to switch (Kubernetes' restricted profile): the job then
	// runs as init's uid, and init, as PID 1 ignoring every signal, is still
	// out of the reach of its signals.
	separate bool
}

// Capabilities init may hold until the job is forked.
const (
	capSetgid  = 6
	capSetuid  = 7
	capSetpcap = 8
	initCaps   = 1<<capSetgid | 1<<capSetuid | 1<<capSetpcap
)

const (
	linuxCapabilityVersion3 = 0x20080522
	prCapbsetRead           = 23
	prCapbsetDrop           = 24
	prSetKeepcaps           = 8
	prCapAmbient            = 47
	prCapAmbientClearAll    = 4
)

type capHeader struct {
	version uint32
	pid     int32
}

type capData struct{ effective, permitted, inheritable uint32 }

// parseIDs reads -ids INIT:JOB.
func parseIDs(s string) (initID, jobID int, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("-ids %q: want INIT:JOB", s)
	}
	if initID, err = strconv.Atoi(a); err != nil || initID <= 0 {
		return 0, 0, fmt.Errorf("-ids %q: bad init id", s)
	}
	if jobID, err = strconv.Atoi(b); err != nil || jobID <= 0 {
		return 0, 0, fmt.Errorf("-ids %q: bad job id", s)
	}
	return initID, jobID, nil
}

// becomeInit switches to the init identity: real and saved ids init's own,
// effective ids the job's. The asymmetry is the point: the kernel lets a
// process signal another when its real or effective uid matches the target's
// real or saved uid, so init (effective uid = the job's) can signal every job
// process, while no job process (all three ids the job's) can signal init; and
// ptrace and prlimit need all three of init's ids to match, which they never
// do. Files init creates (the workspace) belong to the job. With spec empty
// init stays who it is and the job runs as the same uid.
func becomeInit(spec string) (identity, error) {
	if spec == "" {
		// In a sandbox (PID 1) never run a job as root; outside one (tests
		// of the protocol) init runs the job as whoever started it.
		if os.Getuid() == 0 && os.Getpid() == 1 {
			return identity{}, fmt.Errorf("started as root without -ids: refusing to run a job as root")
		}
		return identity{init: os.Getuid(), job: os.Getuid()}, nil
	}
	initID, jobID, err := parseIDs(spec)
	if err != nil {
		return identity{}, err
	}
	id := identity{init: initID, job: jobID, separate: initID != jobID}
	effective := jobID
	if os.Getuid() == 0 {
		// Keep the permitted set across the change away from uid 0.
		if err := allThreadsPrctl(prSetKeepcaps, 1); err != nil {
			return identity{}, fmt.Errorf("keep capabilities: %w", err)
		}
		if err := syscall.Setgroups(nil); err != nil {
			return identity{}, fmt.Errorf("setgroups: %w", err)
		}
	}
	c, err := capget()
	if id.separate && (err != nil || c.permitted&initCaps != initCaps) {
		// The runtime did not give init what it needs to start the job under
		// its own uid: run it as init's, and say so.
		logf("no capability to switch uids (permitted %#x): the job runs as uid %d", c.permitted, initID)
		id.job, id.separate, effective = initID, false, initID
	}
	if os.Getuid() == 0 || id.separate {
		if err := syscall.Setresgid(initID, effective, initID); err != nil {
			return identity{}, fmt.Errorf("setresgid: %w", err)
		}
		if err := syscall.Setresuid(initID, effective, initID); err != nil {
			return identity{}, fmt.Errorf("setresuid: %w", err)
		}
		_ = allThreadsPrctl(prSetKeepcaps, 0)
	}
	if os.Getuid() != initID || os.Geteuid() != effective {
		return identity{}, fmt.Errorf("running as uid %d/%d, want %d/%d", os.Getuid(), os.Geteuid(), initID, effective)
	}
	if !id.separate {
		return id, dropCapabilities()
	}
	// No inheritable or ambient capability: nothing init starts may carry one
	// across exec (lowering the inheritable set clears the ambient one too).
	if err := capset(capData{effective: initCaps, permitted: initCaps}); err != nil {
		return identity{}, fmt.Errorf("capset: %w", err)
	}
	if err := allThreadsPrctl(prCapAmbient, prCapAmbientClearAll); err != nil && err != syscall.EINVAL {
		return identity{}, fmt.Errorf("clear ambient capabilities: %w", err)
	}
	// Empty the bounding set: no process started from here on can gain a
	// capability, even from a file.
	if err := emptyBoundingSet(); err != nil {
		return identity{}, err
	}
	return id, nil
}

// emptyBoundingSet drops every capability of the bounding set on every thread,
// and checks that none is left. Only what the set holds is dropped: each drop is
// an all-threads call, which signals every thread of the runtime and waits for
// each (about 25 µs here), and a runtime that already bounded init to its three
// capabilities (oci, gVisor, Docker) leaves three to drop, not the kernel's 41.
// Every thread holds the same set: each inherited it from the one exec started,
// and nothing but this changes it.
func emptyBoundingSet() error {
	n := 0
	for c := uintptr(0); c < 64; c++ {
		held, err := capbsetRead(c)
		if err == syscall.EINVAL {
			break // past the last capability this kernel knows
		}
		n++
		if err != nil || !held {
			continue
		}
		if err := allThreadsPrctl(prCapbsetDrop, c); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	for c := uintptr(0); c < uintptr(n); c++ {
		if held, err := capbsetRead(c); err != nil || held {
			return fmt.Errorf("the bounding set still holds capability %d (%v)", c, err)
		}
	}
	return nil
}

// capbsetRead reports whether the calling thread's bounding set holds capability c.
func capbsetRead(c uintptr) (bool, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetRead, c, 0)
	if e != 0 {
		return false, e
	}
	return r == 1, nil
}

// credential is what the job is forked with.
func (id identity) credential() *syscall.Credential {
	if !id.separate {
		return nil
	}
	return &syscall.Credential{Uid: uint32(id.job), Gid: uint32(id.job), Groups: []uint32{}}
}

// dropCapabilities empties every capability set of every thread of init.
func dropCapabilities() error {
	return capset(capData{})
}

func capget() (capData, error) {
	h := capHeader{version: linuxCapabilityVersion3}
	var d [2]capData
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		return capData{}, e
	}
	return d[0], nil
}

// capset sets the low 32 capabilities of every thread (capabilities are per
// thread, and the runtime's threads are all init).
func capset(c capData) error {
	h := capHeader{version: linuxCapabilityVersion3}
	d := [2]capData{c, {}}
	_, _, e := syscall.AllThreadsSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0)
	return allThreadsErr(e)
}

func allThreadsPrctl(option int, arg uintptr) error {
	_, _, e := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, uintptr(option), arg, 0)
	return allThreadsErr(e)
}

// allThreadsErr is the error of an AllThreadsSyscall (nil for 0). Go refuses
// the call (ENOTSUP, before any thread is touched) in a program linked with
// cgo, as a plain `go build` or `go install` links aster-init wherever a C
// compiler is installed: the error then says so, since "operation not
// supported" alone names no cause. The host's runtimekit.CheckInitBinary refuses
// such a binary first; this is for one that reached a sandbox some other way.
func allThreadsErr(e syscall.Errno) error {
	switch {
	case e == 0:
		return nil
	case e == syscall.ENOTSUP && builtWithCgo():
		return cgoError{e}
	}
	return e
}

// cgoError is AllThreadsSyscall's refusal in a binary linked with cgo.
type cgoError struct{ errno syscall.Errno }

func (e cgoError) Error() string {
	return e.errno.Error() + ": this aster-init was built with cgo (CGO_ENABLED=1), where Go cannot change the credentials of all its threads;" +
		" rebuild it with CGO_ENABLED=0 go build -o bin/aster-init ./cmd/aster-init (make build does)"
}

func (e cgoError) Unwrap() error { return e.errno }

// builtWithCgo reports whether this binary was built with cgo enabled.
func builtWithCgo() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" {
			return s.Value == "1"
		}
	}
	return false
}

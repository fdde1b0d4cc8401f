package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// directStart lets init execute a one-shot job itself, with no trampoline in
// between, and still hand the job what the trampoline gives it: the highest
// OOM score before its first instruction, and default signal dispositions.
//
// Both are inherited across fork and exec. For the duration of the fork
// (see around), init raises its own OOM score to the job's and gives the
// signals it ignores their default disposition; the child starts from that
// copy and executes the job; then init takes its own score and dispositions
// back. The signal mask needs nothing: Go's fork child restores the mask
// init started with before it executes the job (the trampoline passed on the
// same).
//
// Init cannot open /proc/self/oom_score_adj once it is not dumpable (the file
// then belongs to root), so it opens it at start, while it still can, and
// keeps the descriptor (close-on-exec, and no process of the job can reach
// init's descriptors). Raising one's own score needs no capability; lowering
// it back needs none either as long as it does not go below the lowest value
// a privileged process set (the kernel's oom_score_adj_min): init's own score
// is at least that. newDirectStart checks both with a step of one before any
// job exists; where either fails (another kernel, such as gVisor's, may
// refuse the lowering) the job goes through the trampoline as before.
type directStart struct {
	oom *os.File
	// own is init's score as it started; high says it is already the job's
	// (nothing to raise or lower).
	own  []byte
	high bool
}

// sigIgn is the kernel's SIG_IGN handler value.
const sigIgn = 1

// newDirectStart opens init's own OOM score; nil when the direct start is not
// possible here (the trampoline is used then).
func newDirectStart() *directStart {
	f, err := os.OpenFile("/proc/self/oom_score_adj", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	buf := make([]byte, 16)
	n, err := f.ReadAt(buf, 0)
	own, perr := strconv.Atoi(strings.TrimSpace(string(buf[:max(n, 0)])))
	if (err != nil && n == 0) || perr != nil {
		f.Close()
		return nil
	}
	d := &directStart{oom: f, own: []byte(strconv.Itoa(own))}
	if own >= 1000 {
		d.high = true
		return d
	}
	// One up and back: where this works, 1000 and back works too.
	if _, err := f.WriteAt([]byte(strconv.Itoa(own+1)), 0); err != nil {
		f.Close()
		return nil
	}
	if _, err := f.WriteAt(d.own, 0); err != nil {
		logf("lower the OOM score back to %d: %v", own, err)
		f.Close()
		return nil
	}
	return d
}

// around runs fork with the job's OOM score and default dispositions in
// place, and restores init's own afterwards. It returns fork's results, or
// an error without forking when init's score cannot be raised (the job is
// never started with a lower score than the trampoline would give it).
//
// While it runs, init's ignored signals have their default disposition. No
// process in the sandbox can make use of that: the caller uses it only when
// init is PID 1 of the sandbox (the kernel then drops every signal with the
// default disposition sent from inside the namespace) or the job runs under
// a uid of its own (no job process may signal init at all), and only in a
// one-shot init, where the job is the only other process and forked by this
// very call.
func (d *directStart) around(fork func() (int, error)) (int, error) {
	if !d.high {
		if _, err := d.oom.WriteAt([]byte(jobOOMScore), 0); err != nil {
			return 0, err
		}
		defer func() {
			if _, err := d.oom.WriteAt(d.own, 0); err != nil {
				logf("lower init's OOM score back to %s: %v", d.own, err)
			}
		}()
	}
	// The Go runtime neither handles nor tracks a signal once it is ignored,
	// so its kernel disposition is set here directly: SIG_DFL, then back to
	// the action the kernel held.
	var (
		ignored [64]kernelSigaction
		was     [64]bool
		dfl     kernelSigaction
	)
	for n := uintptr(1); n <= 64; n++ {
		if n == uintptr(syscall.SIGKILL) || n == uintptr(syscall.SIGSTOP) {
			continue
		}
		if sigaction(n, nil, &ignored[n-1]) == 0 && ignored[n-1].handler == sigIgn {
			was[n-1] = sigaction(n, &dfl, nil) == 0
		}
	}
	defer func() {
		for n := uintptr(1); n <= 64; n++ {
			if was[n-1] {
				sigaction(n, &ignored[n-1], nil)
			}
		}
	}()
	return fork()
}

// sigaction is rt_sigaction(2): act, when not nil, becomes n's action; old,
// when not nil, receives the one before.
func sigaction(n uintptr, act, old *kernelSigaction) syscall.Errno {
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, n, uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	return e
}

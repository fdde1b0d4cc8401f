// Command aster-init is the small agent that runs as PID 1 inside every Aster
// sandbox. It reads one framed job from stdin (see internal/initproto), unpacks
// the workspace into /work, runs the command in its own process group, relays
// its output, reaps zombies, kills every leftover process when the command exits
// or the deadline passes, and ends with a result frame. Then it exits, and the
// sandbox is destroyed.
//
// It is built static (CGO_ENABLED=0) and mounted read-only at /.aster/init. On
// Kubernetes an init container runs it with -install to copy it into the Pod,
// and the sandbox runs it with -linger, so that the result is never the last
// thing written before the container exits (see internal/sandbox/kubernetes).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox/hardening"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == execJobFlag || os.Args[1] == execJobSeccompFlag) {
		runTrampoline(os.Args[2:], os.Args[1] == execJobSeccompFlag)
	}
	if isVM(os.Args) {
		runVM(os.Args[2:])
	}
	workDir := flag.String("work", "/work", "directory the workspace is unpacked into")
	linger := flag.Duration("linger", 0, "after the result, wait this long at most for the host to close stdin before exiting")
	install := flag.String("install", "", "copy this binary to the given path and exit (an init container delivering aster-init into a Pod)")
	ids := flag.String("ids", "", "INIT:JOB: the uid (and gid) init runs as, and the one the job runs as")
	seccomp := flag.Bool("seccomp", false, "install Aster's seccomp profile on the job (where no container runtime does: a microVM guest)")
	hold := flag.Bool("hold", false, "hold a session sandbox: run no job, reap orphans, exit when the host closes stdin (each job is a further aster-init started in the sandbox)")
	serveExecs := flag.Bool("serve-execs", false, "with -hold: also serve the session's execs over channels of stdin and stdout, forking each job (keeps CAP_SETUID and CAP_SETGID while holding)")
	portFD := flag.Int("port-fd", -1, "speak the protocol on this inherited descriptor (a microVM's virtio-serial port) instead of stdin and stdout")
	flag.Parse()
	if *install != "" {
		if err := installSelf(*install); err != nil {
			logf("install: %v", err)
			os.Exit(1)
		}
		os.Exit(0)
	}

	// A write to a host that went away must surface as an error we handle (kill
	// the job, exit), not as a silent SIGPIPE death halfway through clean-up.
	signal.Ignore(syscall.SIGPIPE)
	// While init may still open its own OOM score (before it changes uid and
	// stops being dumpable): a one-shot job is then started without the
	// trampoline. A session's holder and a microVM guest keep it.
	var direct *directStart
	if !*hold && !*seccomp {
		direct = newDirectStart()
	}
	// Before anything is read from the host: become the init uid.
	id, err := becomeInit(*ids)
	if err != nil {
		logf("identity: %v", err)
		os.Exit(1)
	}
	ignoreSignals(id.separate)
	// Keep the job from opening /proc/1/fd/* and writing protocol frames in
	// init's name (it shares init's uid where the runtime allows no other).
	// exec resets this for the job itself.
	_ = prctl(syscall.PR_SET_DUMPABLE, 0)
	if os.Getpid() != 1 {
		// Outside a PID namespace (tests), adopt orphans like PID 1 would.
		_ = prctl(PR_SET_CHILD_SUBREAPER, 1)
	}

	// The job shares init's pids limit, so a fork bomb leaves no room for new
	// threads. Keep the runtime small, move stdio onto the poller so no thread
	// blocks in read or write, and create the threads init will need now,
	// while it still can: idle threads are kept and reused.
	runtime.GOMAXPROCS(2)
	stdin, stdout := pollable(0, "stdin"), pollable(1, "stdout")
	if *portFD >= 0 {
		// One descriptor both ways; it is not closed on exec of the job only
		// because ForkExec passes the job nothing but its three pipes.
		port := pollable(*portFD, "port")
		stdin, stdout = port, port
	}
	reserveThreads(8)
	if *seccomp {
		// Compiled here once so that a profile this kernel cannot take fails
		// the boot, not each job; each job's trampoline compiles its own.
		if _, err := hardening.SeccompFilter(); err != nil {
			logf("%v", err)
			os.Exit(1)
		}
	}

	in := initproto.NewReader(stdin)
	out := initproto.NewWriter(stdout)
	a := &agent{in: in, out: out, workDir: *workDir, pid1: os.Getpid() == 1, linger: *linger, id: id, seccomp: *seccomp, direct: direct}
	if *hold {
		os.Exit(a.runHold(*serveExecs))
	}
	os.Exit(a.run())
}

// pollable returns fd as a non-blocking *os.File served by the runtime's poller.
func pollable(fd int, name string) *os.File {
	if err := syscall.SetNonblock(fd, true); err != nil {
		return os.NewFile(uintptr(fd), name)
	}
	return os.NewFile(uintptr(fd), name)
}

// reserveThreads makes the runtime create n OS threads and park them idle.
func reserveThreads(n int) {
	var ready, release sync.WaitGroup
	release.Add(1)
	for range n {
		ready.Add(1)
		go func() {
			runtime.LockOSThread()
			ready.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	ready.Wait()
	release.Done()
}

// installSelf copies the running executable to dst (a new file, mode 0555).
func installSelf(dst string) error {
	src, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o555)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// PR_SET_CHILD_SUBREAPER is not in package syscall.
const PR_SET_CHILD_SUBREAPER = 36

func prctl(option int, arg2 uintptr) error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, uintptr(option), arg2, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "aster-init: "+format+"\n", args...)
}

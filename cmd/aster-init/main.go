// Command aster-init is the small agent that runs as PID 1 inside every Aster
// sandbox. It reads one framed job from stdin (see internal/initproto), unpacks
// the workspace into /work, runs the command in its own process group, relays
// its output, reaps zombies, kills every leftover process when the command exits
// or the deadline passes, and ends with a result frame. Then it exits, and the
// sandbox is destroyed.
//
// It is built static (CGO_ENABLED=0) and mounted read-only at /.aster/init.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/asterhq/aster/internal/initproto"
)

func main() {
	workDir := flag.String("work", "/work", "directory the workspace is unpacked into")
	flag.Parse()

	// A write to a host that went away must surface as an error we handle (kill
	// the job, exit), not as a silent SIGPIPE death halfway through clean-up.
	signal.Ignore(syscall.SIGPIPE)
	// Keep the job (same uid) from opening /proc/1/fd/* and writing protocol
	// frames in init's name. exec resets this for the job itself.
	_ = prctl(syscall.PR_SET_DUMPABLE, 0)
	if os.Getpid() != 1 {
		// Outside a PID namespace (tests), adopt orphans like PID 1 would.
		_ = prctl(PR_SET_CHILD_SUBREAPER, 1)
	}

	in := initproto.NewReader(os.Stdin)
	out := initproto.NewWriter(os.Stdout)
	a := &agent{in: in, out: out, workDir: *workDir, pid1: os.Getpid() == 1}
	os.Exit(a.run())
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

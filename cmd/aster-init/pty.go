package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/initproto"
)

// openPTY allocates a terminal inside the sandbox, in its own devpts: the
// master stays with init, the slave becomes the job's stdin, stdout, stderr
// and controlling terminal. Init's effective uid is the job's when they
// differ (see becomeInit), so the slave belongs to the job user.
func openPTY(size initproto.TermSize) (master, slave *os.File, err error) {
	var fd int
	for _, p := range []string{"/dev/ptmx", "/dev/pts/ptmx"} {
		fd, err = unix.Open(p, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err == nil {
			break
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open the terminal multiplexer: %w", err)
	}
	master = os.NewFile(uintptr(fd), "ptmx")
	fail := func(what string, err error) (*os.File, *os.File, error) {
		master.Close()
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlock the terminal", err)
	}
	if err := setTermSize(master, size); err != nil {
		return fail("size the terminal", err)
	}
	// TIOCGPTPEER opens the slave without a path lookup; where the kernel
	// (or gVisor) lacks it, the slave is opened by its number.
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno == 0 {
		return master, os.NewFile(sfd, "pts"), nil
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		return fail("number of the terminal", err)
	}
	sfdi, err := unix.Open("/dev/pts/"+strconv.FormatUint(uint64(n), 10), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open the terminal", err)
	}
	return master, os.NewFile(uintptr(sfdi), "pts"), nil
}

// setTermSize sets the terminal's size; the kernel tells the terminal's
// foreground process group with SIGWINCH.
func setTermSize(master *os.File, size initproto.TermSize) error {
	return unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
}

// resizePTY applies a resize frame from the host; a malformed one is
// dropped (the terminal keeps its size).
func (a *agent) resizePTY(p []byte) {
	if a.pty == nil {
		return
	}
	size, err := initproto.DecodeResize(p)
	if err != nil {
		logf("%v", err)
		return
	}
	if err := setTermSize(a.pty, size); err != nil {
		logf("resize the terminal: %v", err)
	}
}

// signalSession signals every process whose session is sid: a terminal's
// shell puts each pipeline in a process group of its own (job control),
// so the job's process group alone would miss them. A process that started
// a session of its own (setsid) has left the terminal, as it leaves an exec.
func signalSession(sid int, sig syscall.Signal) {
	d, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range d {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if s, err := sessionOf(pid); err == nil && s == sid {
			_ = syscall.Kill(pid, sig)
		}
	}
}

// sessionOf reads a process's session id from /proc/PID/stat.
func sessionOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatSession(b)
}

// parseStatSession reads the session field of a /proc/PID/stat line. The
// command name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStatSession(b []byte) (int, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	// After ") ": state ppid pgrp session ...
	f := bytes.Fields(b[i+1:])
	if len(f) < 4 {
		return 0, errors.New("stat: short line")
	}
	return strconv.Atoi(string(f[3]))
}

// terminal opens the job's terminal: out is the master init reads the
// terminal's output from, slave the job's stdio, in a second descriptor of
// the master that stdin is written to (its close at stdin's end leaves the
// terminal open). Resize frames go to the master from then on.
func (a *agent) terminal(size initproto.TermSize) (out, slave, in *os.File, err error) {
	master, slave, err := openPTY(size)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("terminal: %w", err)
	}
	fd, err := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		master.Close()
		slave.Close()
		return nil, nil, nil, fmt.Errorf("terminal: %w", err)
	}
	a.pty = master
	return master, slave, os.NewFile(uintptr(fd), "ptmx-in"), nil
}

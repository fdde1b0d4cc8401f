package oci

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// unifiedMount is where a hybrid cgroup host mounts its cgroup v2 hierarchy
// beside the v1 controllers.
const unifiedMount = "/sys/fs/cgroup/unified"

// launcher starts every process of the OCI runtime binary from a few
// dedicated OS threads.
//
// Why: crun refuses a hybrid cgroup host (v1 controllers plus a v2 hierarchy at
// /sys/fs/cgroup/unified) as soon as the v2 side has any controller enabled
// ("cgroups in hybrid mode not supported"), even though it manages the v1
// controllers fine. When that is the case each launcher thread moves into a
// mount namespace of its own (a slave of the host's, so later host mounts
// still show) and unmounts the v2 hierarchy there; crun, started from such a
// thread, then sees a plain cgroup v1 host and manages the sandbox's cgroups
// itself. Nothing else in the process, and nothing on the host, sees the
// change. Several threads, so that a burst of starts on a busy machine does
// not queue behind one thread waiting for a CPU.
type launcher struct {
	reqs chan launchReq
	done chan struct{}
	// hidden says the v2 hierarchy is hidden from the runtime binary.
	hidden bool
}

type launchReq struct {
	cmd *exec.Cmd
	err chan error
}

// launcherThreads is how many threads start runtime processes.
const launcherThreads = 4

// newLauncher starts the launcher threads. hide says whether to hide the v2
// hierarchy of a hybrid host.
func newLauncher(hide bool) (*launcher, error) {
	l := &launcher{reqs: make(chan launchReq), done: make(chan struct{}), hidden: hide}
	ready := make(chan error, launcherThreads)
	for range launcherThreads {
		go l.thread(hide, ready)
	}
	for range launcherThreads {
		if err := <-ready; err != nil {
			l.stop()
			return nil, err
		}
	}
	return l, nil
}

// thread is one launcher thread: it serves start requests until stop.
func (l *launcher) thread(hide bool, ready chan<- error) {
	// Never unlocked: the thread's mount namespace differs from the
	// process's, so the Go runtime must retire it when this goroutine ends.
	runtime.LockOSThread()
	if hide {
		if err := hideUnified(); err != nil {
			ready <- err
			return
		}
	}
	ready <- nil
	for {
		select {
		case r := <-l.reqs:
			r.err <- r.cmd.Start()
		case <-l.done:
			return
		}
	}
}

// start starts cmd from a launcher thread.
func (l *launcher) start(cmd *exec.Cmd) error {
	r := launchReq{cmd: cmd, err: make(chan error, 1)}
	select {
	case l.reqs <- r:
	case <-l.done:
		return errors.New("oci runtime closed")
	}
	return <-r.err
}

// stop ends the launcher threads.
func (l *launcher) stop() { close(l.done) }

func hideUnified() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("private mount namespace for the OCI runtime: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make mounts slave: %w", err)
	}
	if err := unix.Unmount(unifiedMount, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("hide %s from the OCI runtime: %w", unifiedMount, err)
	}
	return nil
}

// hybridWithV2Controllers reports whether this host mounts cgroup v1
// controllers and also a v2 hierarchy with controllers enabled: the layout crun
// refuses.
func hybridWithV2Controllers() bool {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return false
	}
	if err := unix.Statfs(unifiedMount, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return false
	}
	b, err := os.ReadFile(unifiedMount + "/cgroup.controllers")
	return err == nil && len(bytes.TrimSpace(b)) > 0
}

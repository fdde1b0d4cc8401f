package microvm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// hostCgroup is the cgroup around one QEMU process: its memory (guest RAM
// plus QEMU's own), its CPU quota and its task count, so a VM takes no more
// of the host than the run was given whatever happens inside it. cgroup v2
// (one directory) or v1 (one per controller), written directly: no systemd
// is needed.
type hostCgroup struct {
	dirs []string // every directory made, for procs and removal
	v2   bool
	// freezer is the directory whose freezer pauses the VM (a session's
	// pause): the v2 group itself, or the v1 freezer hierarchy's group; ""
	// where v1 has no freezer mounted (pause is then unsupported).
	freezer string
	frozen  atomic.Bool
}

const cgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the group every VM's cgroup is made under.
const cgroupParent = "aster-microvm"

func isCgroup2(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// newHostCgroup makes the cgroup of VM id with its limits.
func newHostCgroup(id string, memoryBytes, milliCPUs, tasks int64) (*hostCgroup, error) {
	period := int64(100_000)
	quota := milliCPUs * period / 1000
	if isCgroup2(cgroupRoot) {
		parent := filepath.Join(cgroupRoot, cgroupParent)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, err
		}
		_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+memory +cpu +pids"), 0)
		_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory +cpu +pids"), 0)
		dir := filepath.Join(parent, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		cg := &hostCgroup{dirs: []string{dir}, v2: true, freezer: dir}
		err := errors.Join(
			write(dir, "memory.max", memoryBytes),
			write(dir, "memory.swap.max", 0),
			os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", quota, period)), 0),
			write(dir, "pids.max", tasks))
		if err != nil {
			cg.remove()
			return nil, fmt.Errorf("host cgroup: %w", err)
		}
		return cg, nil
	}
	cg := &hostCgroup{}
	set := map[string][][2]string{
		"memory": {{"memory.limit_in_bytes", strconv.FormatInt(memoryBytes, 10)}, {"memory.memsw.limit_in_bytes", strconv.FormatInt(memoryBytes, 10)}},
		"cpu":    {{"cpu.cfs_period_us", strconv.FormatInt(period, 10)}, {"cpu.cfs_quota_us", strconv.FormatInt(quota, 10)}},
		"pids":   {{"pids.max", strconv.FormatInt(tasks, 10)}},
	}
	for _, ctl := range []string{"memory", "cpu", "pids", "freezer"} {
		if ctl == "freezer" && !fileExists(filepath.Join(cgroupRoot, ctl, "freezer.state")) && !fileExists(filepath.Join(cgroupRoot, ctl, "tasks")) {
			continue // no freezer hierarchy: a session cannot be paused here
		}
		dir := filepath.Join(cgroupRoot, ctl, cgroupParent, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			cg.remove()
			return nil, fmt.Errorf("host cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, dir)
		if ctl == "freezer" {
			cg.freezer = dir
		}
		for _, kv := range set[ctl] {
			err := os.WriteFile(filepath.Join(dir, kv[0]), []byte(kv[1]), 0)
			if err != nil && !(kv[0] == "memory.memsw.limit_in_bytes" && errors.Is(err, fs.ErrNotExist)) {
				cg.remove()
				return nil, fmt.Errorf("host cgroup %s: %w", kv[0], err)
			}
		}
	}
	return cg, nil
}

func write(dir, name string, v int64) error {
	err := os.WriteFile(filepath.Join(dir, name), []byte(strconv.FormatInt(v, 10)), 0)
	if errors.Is(err, fs.ErrNotExist) && name == "memory.swap.max" {
		return nil // no swap accounting: no swap to limit
	}
	return err
}

// add moves a process into the cgroup.
func (c *hostCgroup) add(pid int) error {
	for _, d := range c.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("host cgroup: %w", err)
		}
	}
	return nil
}

// remove deletes the cgroup once its processes are gone.
func (c *hostCgroup) remove() { rmdirs(c.dirs) }

// errNoFreezer: this host's cgroups have no freezer for the VM.
var errNoFreezer = errors.New("no cgroup freezer for the VM on this host")

// freezeTimeout bounds the wait for every thread of QEMU to be frozen.
const freezeTimeout = 10 * time.Second

// freeze stops (or, with on false, restarts) every thread of QEMU: the
// guest gets no CPU and keeps its memory. It returns once the kernel says
// the group is frozen (or thawed); a group not frozen within freezeTimeout,
// or by the end of ctx, is thawed and the pause refused.
func (c *hostCgroup) freeze(ctx context.Context, on bool) error {
	if c.freezer == "" {
		return errNoFreezer
	}
	file, value, state, want := "freezer.state", "THAWED", "freezer.state", "THAWED"
	if c.v2 {
		file, value, state, want = "cgroup.freeze", "0", "cgroup.events", "frozen 0"
	}
	if on {
		value, want = "FROZEN", "FROZEN"
		if c.v2 {
			value, want = "1", "frozen 1"
		}
	}
	if err := os.WriteFile(filepath.Join(c.freezer, file), []byte(value), 0); err != nil {
		return fmt.Errorf("host cgroup freezer: %w", err)
	}
	c.frozen.Store(on)
	fail := func(err error) error {
		if on {
			c.thaw()
		}
		return fmt.Errorf("host cgroup freezer: %w", err)
	}
	limit := time.NewTimer(freezeTimeout)
	defer limit.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(filepath.Join(c.freezer, state))
		if err != nil {
			return fail(err)
		}
		if hasLine(string(b), want) {
			return nil
		}
		select {
		case <-tick.C:
		case <-limit.C:
			return fail(fmt.Errorf("not %q after %s", want, freezeTimeout))
		case <-ctx.Done():
			return fail(context.Cause(ctx))
		}
	}
}

// thaw restarts a frozen QEMU, so that a kill reaches it (a v1 freezer
// holds even SIGKILL until its group is thawed).
func (c *hostCgroup) thaw() {
	if c.frozen.Load() {
		_ = c.freeze(context.Background(), false)
	}
}

func hasLine(s, line string) bool {
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// rmdirs removes cgroup directories, waiting a little for their last
// process to be reaped (a killed QEMU stays a member until its parent waits
// for it).
func rmdirs(dirs []string) {
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, d := range dirs {
		for {
			err := os.Remove(d)
			if err == nil || errors.Is(err, fs.ErrNotExist) || time.Now().After(deadline) {
				break
			}
			<-tick.C
		}
	}
}

// thawHostCgroup thaws the cgroup of VM id, whoever froze it (a paused
// session's VM): a v1 freezer holds even SIGKILL until its group is thawed.
func thawHostCgroup(id string) {
	_ = os.WriteFile(filepath.Join(cgroupRoot, cgroupParent, id, "cgroup.freeze"), []byte("0"), 0)
	_ = os.WriteFile(filepath.Join(cgroupRoot, "freezer", cgroupParent, id, "freezer.state"), []byte("THAWED"), 0)
}

// removeHostCgroup removes what a VM of this id left, whoever made it: its
// processes are killed, and the directories go once their last process has
// been reaped (a killed QEMU stays a member until its parent waits for it).
func removeHostCgroup(id string) {
	dirs := []string{filepath.Join(cgroupRoot, cgroupParent, id)}
	for _, ctl := range []string{"memory", "cpu", "pids", "freezer"} {
		dirs = append(dirs, filepath.Join(cgroupRoot, ctl, cgroupParent, id))
	}
	thawHostCgroup(id)
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
	}
	rmdirs(dirs)
}

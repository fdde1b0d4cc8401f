package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/sandbox/hardening"
)

// The microVM boot stage (internal/sandbox/microvm). In a microVM aster-init
// is the initramfs's /init: the guest kernel starts it with -vm and the
// limits after "--" on its command line. It loads the few modules the guest
// needs (virtio-mmio, the block device, virtio-serial), mounts the image's
// filesystem read-only from the block device, builds the sandbox's mounts
// under it (size-capped tmpfs at /work and /tmp, a minimal /dev, masked
// /proc and /sys), puts itself in a memory and pids cgroup capped at the
// run's limits, opens the virtio-serial port that carries the protocol,
// switches into the new root and executes the normal init there, which
// speaks the protocol on that port exactly as it does on stdio elsewhere —
// for a session (-hold) as the holder, serving each call on a channel of the
// port (hold.go).
// The job never sees the port or the block device: neither is in its /dev.

const (
	vmFlag     = "-vm"
	vmNewRoot  = "/newroot"
	vmPortName = "aster"
	// vmPortFD is where the protocol port is handed to the normal init.
	vmPortFD = 3
	// vmInitID and vmJobID are the guest's uids for init and the job. The
	// guest kernel is the sandbox's own, so its uids are shared with nothing.
	vmInitID = 900
	vmJobID  = 1000
	// vmShmBytes is the size of /dev/shm, as the other runtimes set it.
	vmShmBytes = 64 << 20
)

// vmModules are loaded in this order from /lib/modules of the initramfs.
var vmModules = []string{"virtio_ring", "virtio", "virtio_mmio", "virtio_blk", "virtio_console"}

// vmSysctls are set in the guest before the job exists: no user namespaces
// (no unprivileged route to mount, or to kernel code only root reaches), no
// unprivileged eBPF or perf events, no kernel addresses or log, and memory
// overcommitted as a container's host would.
var vmSysctls = map[string]string{
	"user/max_user_namespaces":         "0",
	"kernel/unprivileged_bpf_disabled": "1",
	"kernel/perf_event_paranoid":       "3",
	"kernel/kptr_restrict":             "2",
	"kernel/dmesg_restrict":            "1",
	"kernel/unprivileged_userns_clone": "0",
	"vm/unprivileged_userfaultfd":      "0",
	// Committed as on a large host: an allocation beyond the guest's RAM
	// succeeds, and the job's cgroup ends it (status oom).
	"vm/overcommit_memory": "1",
}

type vmConfig struct {
	memory, pids, work, tmp int64
	linger                  time.Duration
	// hold makes the normal init a session's holder serving execs over the
	// port's channels (-hold -serve-execs) instead of one job's init.
	hold bool
}

// runVM is the boot stage; it never returns.
func runVM(args []string) {
	fs := flag.NewFlagSet("aster-init -vm", flag.ContinueOnError)
	var c vmConfig
	fs.Int64Var(&c.memory, "memory", 0, "memory limit of the job's cgroup, bytes")
	fs.Int64Var(&c.pids, "pids", 0, "pids limit of the job's cgroup")
	fs.Int64Var(&c.work, "work", 0, "size of /work, bytes")
	fs.Int64Var(&c.tmp, "tmp", 0, "size of /tmp, bytes")
	fs.DurationVar(&c.linger, "linger", 0, "passed on to init: how long it waits for the host after its result")
	fs.BoolVar(&c.hold, "hold", false, "start init as a session's holder serving execs over channels of the port (-hold -serve-execs)")
	err := fs.Parse(args)
	if err == nil && (c.memory <= 0 || c.pids <= 0 || c.work <= 0 || c.tmp <= 0) {
		err = errors.New("every limit must be positive")
	}
	if err == nil {
		err = vmBoot(c)
	}
	logf("microvm boot: %v", err)
	// PID 1 exiting panics the guest kernel, which ends the VM (panic=-1 and
	// -no-reboot on the host side).
	os.Exit(1)
}

func vmBoot(c vmConfig) error {
	for _, m := range []struct{ dir, typ string }{{"/proc", "proc"}, {"/sys", "sysfs"}, {"/dev", "devtmpfs"}} {
		_ = os.MkdirAll(m.dir, 0o755)
		if err := unix.Mount(m.typ, m.dir, m.typ, unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s: %w", m.dir, err)
		}
	}
	for _, name := range vmModules {
		if err := loadModule("/lib/modules/" + name + ".ko"); err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
	}
	// The guest kernel is the sandbox's own, but what an unprivileged job
	// can ask of it is kept small all the same.
	for _, k := range slices.Sorted(maps.Keys(vmSysctls)) {
		if err := os.WriteFile("/proc/sys/"+k, []byte(vmSysctls[k]), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sysctl %s: %w", k, err)
		}
	}
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	port, err := waitPort(10 * time.Second)
	if err != nil {
		return err
	}
	if err := waitFile("/dev/vda", 10*time.Second); err != nil {
		return err
	}
	if err := os.MkdirAll(vmNewRoot, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("/dev/vda", vmNewRoot, "ext4", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "noload"); err != nil {
		return fmt.Errorf("mount the image's filesystem: %w", err)
	}
	if err := vmMounts(vmNewRoot, c); err != nil {
		return err
	}
	if err := vmCgroup(vmNewRoot, c); err != nil {
		return err
	}
	// aster-init itself, where the other runtimes mount it.
	if err := unix.Mount("/init", vmNewRoot+"/.aster/init", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind aster-init: %w", err)
	}
	if err := unix.Mount("", vmNewRoot+"/.aster/init", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("bind aster-init read-only: %w", err)
	}
	// The port is opened here, before the switch, and handed on as fd 3:
	// the new root's /dev has no node for it.
	fd, err := unix.Open(port, unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", port, err)
	}
	if fd != vmPortFD {
		if err := unix.Dup2(fd, vmPortFD); err != nil {
			return err
		}
		unix.Close(fd)
	}
	if err := os.Chdir(vmNewRoot); err != nil {
		return err
	}
	if err := unix.Mount(".", "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move the new root: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	if err := os.Chdir("/work"); err != nil {
		return err
	}
	_ = unix.Sethostname([]byte("sandbox"))
	// As on the other runtimes: setuid binaries run with the caller's ids,
	// no file capability is gained, no core dumps, 1024 open files.
	if err := prctl(unix.PR_SET_NO_NEW_PRIVS, 1); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 1024, Max: 1024})
	argv := []string{"/.aster/init", "-ids", fmt.Sprintf("%d:%d", vmInitID, vmJobID), "-port-fd", strconv.Itoa(vmPortFD), "-linger", c.linger.String(), "-seccomp"}
	if c.hold {
		// A session: init holds the VM and forks each exec's job exactly as
		// a one-shot init forks its one job (the seccomp trampoline, the job
		// uid); when the host closes the port it exits, and the VM ends.
		argv = append(argv, "-hold", "-serve-execs")
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "GOMAXPROCS=1"}
	return unix.Exec(argv[0], argv, env)
}

// loopbackUp brings up lo, the guest's only interface (a container's network
// namespace has it up too): loopback services of the job, and init's egress
// proxy when a run has one, need it.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// loadModule loads a kernel module; one built in or already loaded is fine.
func loadModule(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // built into this kernel
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
}

// waitPort finds the virtio-serial port the host named for the protocol.
func waitPort(timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err == nil && string(bytes.TrimSpace(b)) == vmPortName {
				dev := "/dev/" + filepath.Base(filepath.Dir(n))
				return dev, waitFile(dev, time.Until(deadline))
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no virtio-serial port named %q", vmPortName)
		}
		<-tick.C
	}
}

func waitFile(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear", path)
		}
		<-tick.C
	}
}

// vmMounts builds the sandbox's filesystem under root: the same set the
// oci runtime's bundle asks for.
func vmMounts(root string, c vmConfig) error {
	tmpfs := func(size int64, mode string) string {
		return fmt.Sprintf("size=%d,nr_inodes=%d,uid=%d,gid=%d,mode=%s", size, hardening.TmpfsInodes(size), vmJobID, vmJobID, mode)
	}
	type mnt struct {
		dst, typ string
		flags    uintptr
		data     string
	}
	const nsx = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	for _, m := range []mnt{
		{"/proc", "proc", nsx, ""},
		{"/sys", "sysfs", nsx | unix.MS_RDONLY, ""},
		{"/dev", "tmpfs", unix.MS_NOSUID | unix.MS_STRICTATIME, "mode=755,size=65536k"},
		{"/work", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, tmpfs(c.work, "0755")},
		{"/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, tmpfs(c.tmp, "1777")},
	} {
		if err := unix.Mount(m.typ, root+m.dst, m.typ, m.flags, m.data); err != nil {
			return fmt.Errorf("mount %s: %w", m.dst, err)
		}
	}
	dev := root + "/dev"
	for _, n := range []struct {
		name         string
		major, minor uint32
	}{{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}} {
		if err := unix.Mknod(dev+"/"+n.name, unix.S_IFCHR|0o666, int(unix.Mkdev(n.major, n.minor))); err != nil {
			return fmt.Errorf("mknod /dev/%s: %w", n.name, err)
		}
		_ = os.Chmod(dev+"/"+n.name, 0o666)
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"}} {
		if err := os.Symlink(l[1], dev+"/"+l[0]); err != nil {
			return err
		}
	}
	for _, d := range []string{"pts", "shm", "mqueue"} {
		if err := os.Mkdir(dev+"/"+d, 0o755); err != nil {
			return err
		}
	}
	for _, m := range []mnt{
		{"/dev/pts", "devpts", unix.MS_NOSUID | unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5"},
		{"/dev/shm", "tmpfs", nsx, fmt.Sprintf("mode=1777,size=%d", vmShmBytes)},
		{"/dev/mqueue", "mqueue", nsx, ""},
	} {
		if err := unix.Mount(m.typ, root+m.dst, m.typ, m.flags, m.data); err != nil {
			return fmt.Errorf("mount %s: %w", m.dst, err)
		}
	}
	// The guest's own /proc and /sys describe the guest, not the host; they
	// are masked all the same, so a job sees what it sees on every runtime.
	for _, p := range hardening.MaskedPaths() {
		dst := root + p
		fi, err := os.Stat(dst)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", dst, "tmpfs", unix.MS_RDONLY|nsx, "size=0")
		} else {
			err = unix.Mount(dev+"/null", dst, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
	}
	for _, p := range hardening.ReadonlyPaths() {
		dst := root + p
		if _, err := os.Stat(dst); err != nil {
			continue
		}
		if err := unix.Mount(dst, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", p, err)
		}
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|nsx, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", p, err)
		}
	}
	return nil
}

// vmCgroup caps everything that runs from here on (init and the job, as in
// a container's cgroup) at the run's memory and pids limits: guest RAM holds
// the guest kernel too, so the job's memory is capped inside the guest. The
// sandbox's cgroup is then what /sys/fs/cgroup shows, read-only, so init reads
// its OOM count where it does on every runtime.
func vmCgroup(root string, c vmConfig) error {
	const cg = "/sys/fs/cgroup"
	if err := unix.Mount("cgroup2", cg, "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount cgroup2: %w", err)
	}
	if err := os.WriteFile(cg+"/cgroup.subtree_control", []byte("+memory +pids"), 0); err != nil {
		return fmt.Errorf("enable memory and pids controllers: %w", err)
	}
	dir := cg + "/sandbox"
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for _, f := range [][2]string{
		{"memory.max", strconv.FormatInt(c.memory, 10)},
		{"memory.swap.max", "0"},
		{"pids.max", strconv.FormatInt(c.pids, 10)},
	} {
		name, v := f[0], f[1]
		if err := os.WriteFile(dir+"/"+name, []byte(v), 0); err != nil && !(name == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("join the sandbox cgroup: %w", err)
	}
	dst := root + cg
	if err := unix.Mount(dir, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the sandbox cgroup: %w", err)
	}
	if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("bind the sandbox cgroup read-only: %w", err)
	}
	return nil
}

// isVM says whether argv asks for the boot stage (the kernel passes what
// follows "--" on its command line to init).
func isVM(args []string) bool {
	return len(args) > 1 && strings.TrimSpace(args[1]) == vmFlag
}

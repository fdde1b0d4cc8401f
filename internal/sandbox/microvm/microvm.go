// Package microvm runs each Aster sandbox in its own QEMU microVM: a guest
// kernel of its own (Debian's, not the host's), aster-init as the guest's
// PID 1 speaking the usual protocol over a virtio-serial port, the sandbox
// image as a read-only virtio block device, no network device at all. QEMU
// runs as the sandbox's own unprivileged uid under its seccomp sandbox, in
// a host cgroup capping its memory, CPU and tasks. KVM is used when it boots
// the guest; otherwise QEMU's software CPU (TCG), which is for development
// and tests only.
package microvm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// Accelerators: Options.Accel.
const (
	AccelAuto = "auto" // KVM when it boots the guest, else TCG (with a warning)
	AccelKVM  = "kvm"
	AccelTCG  = "tcg"
)

// Defaults of the runtime (`--runtime microvm`): the `microvm:` section of
// aster.yaml starts from them.
const (
	DefaultQEMU = "qemu-system-x86_64"
	// DefaultKernelDir is where scripts/microvm-kernel.sh (make setup) puts
	// the guest kernel.
	DefaultKernelDir = "/var/lib/aster/microvm/kernel"
	// DefaultStateDir holds one directory and record per VM.
	DefaultStateDir = "/run/aster/microvm"
	// FallbackStateDir is used when /run is not a tmpfs.
	FallbackStateDir = "/dev/shm/aster-microvm"
	// DefaultCacheDir holds guest builds, image trees and disks.
	DefaultCacheDir = "/var/lib/aster/microvm"
	// DefaultAccel: KVM when it boots the guest, else TCG.
	DefaultAccel = AccelAuto
)

// Options configure the runtime. The defaults are above.
type Options struct {
	// QEMU is the qemu-system-x86_64 binary (a name in PATH or a path).
	QEMU string
	// KernelDir holds the guest kernel (scripts/microvm-kernel.sh).
	KernelDir string
	// StateDir holds one directory and record per VM.
	StateDir string
	// CacheDir holds guest initramfs builds, exported image trees and disks.
	CacheDir string
	// InitPath is the host path of the static aster-init binary.
	InitPath string
	// Images resolves and exports images (the Docker engine).
	Images oci.ImageSource
	// Accel is auto, kvm or tcg.
	Accel string
	// Identities hands out each VM's own uid for QEMU; nil uses a pool over
	// the default range.
	Identities *runtimekit.IdentityPool
	Logger     *slog.Logger
}

// Runtime is the microVM implementation of sandbox.Runtime, and of
// sandbox.SessionRuntime (session.go).
type Runtime struct {
	opts    Options
	qemu    string
	guest   guest
	trees   *oci.RootfsCache
	disks   *disks
	runsDir string
	ids     *runtimekit.IdentityPool
	log     *slog.Logger
	tscKHz  int64

	launch *launcher

	accelOnce sync.Once
	accelMu   sync.Mutex
	accel     string
	decided   bool
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New checks QEMU, the kernel and the directories, and builds the guest's
// initramfs if this aster-init has none yet.
func New(opts Options) (*Runtime, error) {
	if opts.QEMU == "" || opts.KernelDir == "" || opts.StateDir == "" || opts.CacheDir == "" || opts.InitPath == "" {
		return nil, errors.New("microvm runtime: QEMU, kernel, state and cache directories and aster-init are required")
	}
	switch opts.Accel {
	case "":
		opts.Accel = AccelAuto
	case AccelAuto, AccelKVM, AccelTCG:
	default:
		return nil, fmt.Errorf("microvm accelerator %q: want auto, kvm or tcg", opts.Accel)
	}
	bin, err := exec.LookPath(opts.QEMU)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v (install it, e.g. `apt-get install qemu-system-x86`)", sandbox.ErrUnavailable, opts.QEMU, err)
	}
	initAbs, err := runtimekit.CheckInitBinary(opts.InitPath)
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: the microvm runtime needs root (host cgroups, and QEMU started as each sandbox's own uid)", sandbox.ErrUnavailable)
	}
	for _, d := range []string{opts.StateDir, opts.CacheDir} {
		// QEMU is handed open files, never a path: these stay root's.
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("microvm directory: %w", err)
		}
	}
	r := &Runtime{opts: opts, qemu: bin, runsDir: filepath.Join(opts.StateDir, "runs"), log: opts.Logger, tscKHz: hostTSCKHz()}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(r.runsDir, 0o700); err != nil {
		return nil, err
	}
	r.launch = newLauncher()
	if r.guest, err = ensureGuest(opts.CacheDir, opts.KernelDir, initAbs); err != nil {
		return nil, err
	}
	if r.trees, err = oci.NewRootfsCache(filepath.Join(opts.CacheDir, "trees"), opts.Images); err != nil {
		return nil, fmt.Errorf("microvm image cache: %w", err)
	}
	r.disks = &disks{dir: filepath.Join(opts.CacheDir, "disks")}
	if r.ids = opts.Identities; r.ids == nil {
		if r.ids, err = runtimekit.NewIdentityPool(runtimekit.IdentityPoolOptions{}); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Name implements sandbox.Runtime.
func (r *Runtime) Name() string { return "microvm" }

// GuestRelease is the guest kernel's release, as uname -r shows it inside.
func (r *Runtime) GuestRelease() string { return r.guest.Release }

// Check implements sandbox.Runtime.
func (r *Runtime) Check(ctx context.Context) error {
	if _, err := os.Stat(r.qemu); err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	if _, err := os.Stat(r.guest.Initrd); err != nil {
		return fmt.Errorf("%w: guest: %v", sandbox.ErrUnavailable, err)
	}
	return nil
}

// ImageInfo implements sandbox.Runtime.
func (r *Runtime) ImageInfo(ctx context.Context, image string) (sandbox.ImageInfo, error) {
	return r.trees.Info(ctx, image)
}

// EnsureImage exports the image and builds its disk now, so the first
// sandbox does not pay for it.
func (r *Runtime) EnsureImage(ctx context.Context, image string) error {
	_, err := r.disk(ctx, image)
	return err
}

func (r *Runtime) disk(ctx context.Context, image string) (string, error) {
	info, err := r.trees.Info(ctx, image)
	if err != nil {
		return "", err
	}
	if p := r.disks.path(info.Digest); fileExists(p) {
		runtimekit.MarkUsed(p)
		return p, nil
	}
	tree, err := r.trees.Rootfs(ctx, image)
	if err != nil {
		return "", err
	}
	p, err := r.disks.ensure(ctx, info.Digest, tree)
	if err != nil {
		return "", err
	}
	// The disk is all a VM needs: the exported tree would only take room.
	if err := os.RemoveAll(tree); err != nil {
		r.log.Warn("remove exported tree", "dir", tree, "err", err)
	}
	return p, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// record is what the state directory keeps about one VM, for the reaper.
type record struct {
	ID       string    `json:"id"`
	RunID    string    `json:"run_id"`
	Deadline time.Time `json:"deadline"`
	Created  time.Time `json:"created"`
	PID      int       `json:"pid"`
	// StartTicks is the QEMU process's start time (field 22 of
	// /proc/PID/stat), so a recycled pid is never killed.
	StartTicks uint64 `json:"start_ticks"`
}

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func (r *Runtime) recordPath(id string) string { return filepath.Join(r.runsDir, id+".json") }

func (r *Runtime) writeRecord(rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := r.recordPath(rec.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.recordPath(rec.ID))
}

func (r *Runtime) records() ([]record, error) {
	entries, err := os.ReadDir(r.runsDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []record
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || !validID.MatchString(id) {
			continue
		}
		rec := record{ID: id}
		if b, err := os.ReadFile(filepath.Join(r.runsDir, e.Name())); err == nil {
			_ = json.Unmarshal(b, &rec)
			rec.ID = id
		}
		out = append(out, rec)
	}
	return out, nil
}

// List implements sandbox.Runtime from the records of every Aster process
// sharing the state directory.
func (r *Runtime) List(ctx context.Context) ([]sandbox.Managed, error) {
	recs, err := r.records()
	if err != nil {
		return nil, err
	}
	out := make([]sandbox.Managed, 0, len(recs))
	for _, rec := range recs {
		st := "gone"
		if rec.PID > 0 && processStart(rec.PID) == rec.StartTicks {
			st = "running"
		}
		out = append(out, sandbox.Managed{ID: rec.ID, RunID: rec.RunID, Deadline: rec.Deadline, State: st, Created: rec.Created})
	}
	return out, nil
}

// Remove implements sandbox.Runtime: kill the VM's QEMU (only the process
// the record names, checked by its start time), remove its cgroup
// and record. A VM already gone is not an error.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("remove sandbox: invalid id %q", id)
	}
	var rec record
	if b, err := os.ReadFile(r.recordPath(id)); err == nil {
		_ = json.Unmarshal(b, &rec)
	}
	if rec.PID > 0 && rec.StartTicks != 0 && processStart(rec.PID) == rec.StartTicks {
		_ = unix.Kill(rec.PID, unix.SIGKILL)
		thawHostCgroup(id) // a paused session's VM
		waitGone(rec.PID, rec.StartTicks, 5*time.Second)
	}
	removeHostCgroup(id)
	if err := os.Remove(r.recordPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove sandbox record: %w", err)
	}
	return nil
}

// processStart returns a process's start time in clock ticks, 0 when it is
// gone (or a zombie whose stat cannot be read).
func processStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces and parentheses: fields count from
	// after its last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

func waitGone(pid int, start uint64, d time.Duration) {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for processStart(pid) == start && time.Now().Before(deadline) {
		<-tick.C
	}
}

// hostTSCKHz is the host's TSC frequency, which a TCG guest's TSC runs at
// (QEMU reads the host's). Without a PIT or HPET it can calibrate against
// under TCG, the guest kernel is told it (tsc_early_khz).
func hostTSCKHz() int64 {
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/tsc_freq_khz"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "cpu MHz"); ok {
			v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
			if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
				return int64(f * 1000)
			}
		}
	}
	return 0
}

// sysProcAttr starts QEMU as uid in a process group of its own (so a
// Ctrl-C at the terminal reaches Aster, which decides, not QEMU), killed by
// the kernel if the thread that started it (the launcher's, which never
// exits) dies with Aster.
// With KVM it is also in /dev/kvm's group, its only supplementary group.
func sysProcAttr(uid int, kvm bool) *syscall.SysProcAttr {
	groups := []uint32{}
	if gid, ok := kvmGroup(); ok && kvm {
		groups = append(groups, gid)
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: groups}}
}

// launcher starts every QEMU from one OS thread that never exits: the
// kernel's parent-death signal follows the thread that forked, so QEMU is
// killed when Aster dies, however it dies, and never because the Go runtime
// retired a thread.
type launcher struct{ reqs chan launchReq }

type launchReq struct {
	cmd *exec.Cmd
	err chan error
}

func newLauncher() *launcher {
	l := &launcher{reqs: make(chan launchReq)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the process
		for r := range l.reqs {
			r.err <- r.cmd.Start()
		}
	}()
	return l
}

func (l *launcher) start(cmd *exec.Cmd) error {
	r := launchReq{cmd: cmd, err: make(chan error, 1)}
	l.reqs <- r
	return <-r.err
}

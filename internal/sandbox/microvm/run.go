package microvm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// Sizes a VM adds to what its run was given. Limits.MemoryBytes caps the
// job (a memory cgroup inside the guest); the guest kernel and aster-init
// need GuestOverheadBytes of guest RAM beside it, and QEMU itself (its code
// cache under TCG, device emulation, its threads) HostOverheadBytes of host
// memory beyond the guest's RAM. The host cgroup is the sum.
const (
	GuestOverheadBytes = 128 << 20
	HostOverheadBytes  = 192 << 20
	// tcgCodeCacheMiB bounds QEMU's translation cache (its default is 1 GiB).
	tcgCodeCacheMiB = 64
	// hostTasks bounds QEMU's threads (vCPUs, I/O, RCU, workers).
	hostTasks = 256
)

// bootTimeout bounds a boot to aster-init's hello: a few seconds with KVM,
// several under TCG on a busy machine.
const bootTimeout = 90 * time.Second

// kvmProbeTimeout bounds the boot that decides whether KVM works here.
const kvmProbeTimeout = 30 * time.Second

// initLinger is how long the guest's init waits, after its result, for the
// host to close the port: the VM must not end before the result is across.
const initLinger = 10 * time.Second

// Prepare implements sandbox.Runtime: boot a VM for opts and wait for
// aster-init's hello. On any failure the VM and its state are removed.
func (r *Runtime) Prepare(ctx context.Context, opts sandbox.PrepareOptions) (sandbox.Instance, error) {
	return r.prepare(ctx, opts, false)
}

// prepare is Prepare; hold boots a session's VM (session.go), whose init
// holds it and serves execs over channels of its port.
func (r *Runtime) prepare(ctx context.Context, opts sandbox.PrepareOptions, hold bool) (*instance, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	id := opts.RunID
	if id == "" {
		id = sandbox.NewRunID()
	}
	if !validID.MatchString(id) {
		return nil, sandbox.Invalidf("run id %q is not a valid sandbox id", id)
	}
	disk, err := r.disk(ctx, opts.Image)
	if err != nil {
		return nil, err
	}
	accel := r.accelerator()
	inst, err := r.boot(ctx, id, opts, disk, accel, hold)
	if err != nil && accel == AccelKVM && r.opts.Accel == AccelAuto && r.kvmUndecided() {
		r.decide(AccelTCG, err)
		inst, err = r.boot(ctx, id, opts, disk, AccelTCG, hold)
	} else if err == nil && accel == AccelKVM {
		r.decide(AccelKVM, nil)
	}
	if errors.Is(err, runtimekit.ErrNoHello) && ctx.Err() == nil {
		// Rarely (twice in a day of loaded CI runs under TCG; never in 400
		// boots in a row beside stress-ng) a guest says nothing at all; the
		// failed VM is gone, and one fresh boot is worth its seconds to the
		// caller.
		r.log.Warn("microvm: the guest did not come up in time; booting a fresh one", "id", id, "err", err)
		inst, err = r.boot(ctx, id, opts, disk, r.accelerator(), hold)
	}
	if err != nil {
		return nil, err
	}
	return inst, nil
}

// boot starts one VM and waits for its hello.
func (r *Runtime) boot(ctx context.Context, id string, opts sandbox.PrepareOptions, disk, accel string, hold bool) (_ *instance, err error) {
	t0 := time.Now()
	ident, err := r.ids.Acquire()
	if err != nil {
		return nil, err
	}
	inst := &instance{rt: r, id: id, ident: ident, accel: accel, exited: make(chan struct{})}
	defer func() {
		if err != nil {
			inst.Close(context.WithoutCancel(ctx))
		}
	}()
	rec := record{ID: id, RunID: opts.RunID, Deadline: opts.Deadline, Created: t0}
	if err := r.writeRecord(rec); err != nil {
		close(inst.exited)
		return inst, fmt.Errorf("create sandbox state: %w", err)
	}
	inst.recorded = true
	l := opts.Limits
	guestRAM := l.MemoryBytes + GuestOverheadBytes
	if inst.cg, err = newHostCgroup(id, guestRAM+HostOverheadBytes, l.MilliCPUs, hostTasks); err != nil {
		close(inst.exited)
		return inst, err
	}
	// QEMU gets everything it reads as an open descriptor, so it needs no
	// path into Aster's directories: the disk (fd 3, -add-fd), the kernel and
	// initramfs (fds 4 and 5, opened by QEMU as /proc/self/fd/N, which
	// checks only the file's own mode) and its end of the port (fd 6, a
	// socketpair).
	files, hostEnd, err := r.qemuFiles(disk)
	if err != nil {
		close(inst.exited)
		return inst, err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	inst.conn = hostEnd
	inst.frames = initproto.NewReader(hostEnd)
	cmd := exec.Command(r.qemu, r.qemuArgs(accel, id, guestRAM, l, hold)...)
	cmd.ExtraFiles = files
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = sysProcAttr(ident.Init, accel == AccelKVM)
	// QEMU's stdout is the guest's console (the boot stage's messages and
	// the kernel's at loglevel 1), with its own stderr, kept capped.
	inst.qemuLog = runtimekit.NewLockedCapture(16 << 10)
	cmd.Stdout, cmd.Stderr = inst.qemuLog, inst.qemuLog
	inst.SetTiming("create", time.Since(t0))
	t1 := time.Now()
	if err := r.launch.start(cmd); err != nil {
		close(inst.exited)
		return inst, fmt.Errorf("%w: start qemu: %v", sandbox.ErrUnavailable, err)
	}
	inst.proc = cmd.Process
	go func() {
		inst.exitErr = cmd.Wait()
		close(inst.exited)
	}()
	// QEMU has touched little memory yet; from here on all it uses is charged
	// to its cgroup.
	if err := inst.cg.add(cmd.Process.Pid); err != nil {
		return inst, err
	}
	rec.PID, rec.StartTicks = cmd.Process.Pid, processStart(cmd.Process.Pid)
	if err := r.writeRecord(rec); err != nil {
		return inst, err
	}
	inst.SetTiming("start", time.Since(t1))

	timeout := bootTimeout
	if accel == AccelKVM && r.kvmUndecided() {
		timeout = kvmProbeTimeout
	}
	t2 := time.Now()
	hello, err := runtimekit.AwaitHelloFrame(ctx, inst.frames, timeout-time.Since(t2), inst.diagnostics)
	if err != nil {
		return inst, err
	}
	if hold && !hello.Execs {
		return inst, fmt.Errorf("%w: the guest's init does not serve a session's execs", sandbox.ErrProtocol)
	}
	inst.SetTiming("init", time.Since(t2))
	return inst, nil
}

// qemuFiles opens what QEMU is handed: the disk read-only, the kernel, the
// initramfs, and one end of the port's socketpair (the other is returned).
func (r *Runtime) qemuFiles(disk string) ([]*os.File, *net.UnixConn, error) {
	var files []*os.File
	fail := func(err error) ([]*os.File, *net.UnixConn, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, nil, err
	}
	for _, p := range []string{disk, r.guest.Kernel, r.guest.Initrd} {
		f, err := os.Open(p)
		if err != nil {
			return fail(fmt.Errorf("open %s: %w", p, err))
		}
		files = append(files, f)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(fmt.Errorf("port socketpair: %w", err))
	}
	hostFile := os.NewFile(uintptr(fds[0]), "port-host")
	files = append(files, os.NewFile(uintptr(fds[1]), "port-qemu"))
	c, err := net.FileConn(hostFile)
	hostFile.Close()
	if err != nil {
		return fail(fmt.Errorf("port socket: %w", err))
	}
	return files, c.(*net.UnixConn), nil
}

// qemuArgs is the whole QEMU command line of one VM. Nothing in it comes
// from the request except the sizes (validated by the Manager).
func (r *Runtime) qemuArgs(accel, id string, guestRAM int64, l sandbox.Limits, hold bool) []string {
	vcpus := max((l.MilliCPUs+999)/1000, 1)
	cpu, accelOpt := "max", "tcg,tb-size="+strconv.Itoa(tcgCodeCacheMiB)
	if accel == AccelKVM {
		cpu, accelOpt = "host", "kvm"
	}
	// Nothing the guest would do at boot that a one-job VM needs: no EDD
	// probe, no crypto self-tests, one UART. When init exits the kernel
	// panics and restarts at once (panic=-1) by a triple fault (reboot=t),
	// a reset that -no-reboot turns into QEMU's exit. Left to its default
	// order (ACPI, keyboard controller, EFI, BIOS), the restart of a
	// panicking guest now and then fell through to the BIOS jump, which
	// booted the guest again: 3 of 18 host-less VMs never ended that way.
	cmdline := []string{"console=ttyS0", "loglevel=1", "panic=-1", "reboot=t", "edd=off", "cryptomgr.notests", "8250.nr_uarts=1", "rdinit=/init"}
	if accel == AccelTCG && r.tscKHz > 0 {
		// Under TCG the guest finds no timer to calibrate its TSC against.
		cmdline = append(cmdline, "tsc_early_khz="+strconv.FormatInt(r.tscKHz, 10))
	}
	cmdline = append(cmdline, "--", "-vm",
		"-memory", strconv.FormatInt(l.MemoryBytes, 10),
		"-pids", strconv.FormatInt(l.Pids, 10),
		"-work", strconv.FormatInt(l.WorkdirBytes, 10),
		"-tmp", strconv.FormatInt(l.TmpBytes, 10),
		"-linger", initLinger.String())
	if hold {
		cmdline = append(cmdline, "-hold")
	}
	return []string{
		"-name", "aster-" + id,
		"-M", "microvm,pit=on,pic=on,rtc=on,isa-serial=on",
		"-accel", accelOpt, "-cpu", cpu,
		"-m", strconv.FormatInt((guestRAM+(1<<20)-1)>>20, 10) + "M",
		"-smp", strconv.FormatInt(vcpus, 10),
		"-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none", "-nic", "none",
		"-no-reboot",
		"-kernel", "/proc/self/fd/4", "-initrd", "/proc/self/fd/5",
		"-append", strings.Join(cmdline, " "),
		"-serial", "stdio",
		"-add-fd", "fd=3,set=1,opaque=image",
		"-drive", "id=image,file=/dev/fdset/1,format=raw,if=none,readonly=on,cache=none,aio=threads",
		"-device", "virtio-blk-device,drive=image",
		"-device", "virtio-serial-device,max_ports=2",
		"-chardev", "socket,id=port,fd=6",
		"-device", "virtserialport,chardev=port,name=aster",
		"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
	}
}

// instance is one booted VM.
type instance struct {
	rt    *Runtime
	id    string
	ident runtimekit.Identity
	// recorded says the record is this instance's (written by it).
	recorded bool
	accel    string
	cg       *hostCgroup

	proc      *os.Process
	qemuLog   *runtimekit.LockedCapture // QEMU's own stderr
	exited    chan struct{}
	exitErr   error
	conn      *net.UnixConn
	frames    *initproto.Reader
	destroyed atomic.Bool

	runtimekit.InstanceState
}

func (i *instance) ID() string { return i.id }

// Done is closed once the VM is gone (the warm pool skips dead ones).
func (i *instance) Done() <-chan struct{} { return i.exited }

// diagnostics is what QEMU printed: its own errors and the guest's console
// (the boot stage's and init's messages, the kernel's at loglevel 1).
func (i *instance) diagnostics() string {
	if i.qemuLog == nil {
		return ""
	}
	select {
	case <-i.exited:
	case <-time.After(time.Second):
	}
	if s := strings.TrimSpace(i.qemuLog.String()); s != "" {
		return " (qemu and guest console: " + s + ")"
	}
	return ""
}

// Run implements sandbox.Instance.
func (i *instance) Run(ctx context.Context, job sandbox.Job) (sandbox.Result, error) {
	return i.RunOnce(ctx, job, runtimekit.RunParts{
		ID:          i.id,
		Runtime:     "microvm",
		W:           i.conn,
		R:           i.frames,
		Destroy:     i.destroy,
		Exited:      i.exited,
		HostOOM:     i.hostOOM,
		Diagnostics: i.diagnostics,
	})
}

// hostOOM implements runtimekit.Session.HostOOM for a VM that ended without a
// result: the guest kernel's OOM killer taking init (the only way init dies
// by SIGKILL: no job process can signal it) panics the guest, and the panic
// names the signal on the console. While the VM runs the host cannot read
// the guest's cgroup, so init's own count stands.
func (i *instance) hostOOM(ended bool) (int64, bool) {
	if !ended || i.destroyed.Load() {
		return 0, false
	}
	select {
	case <-i.exited: // the console's copier is done once QEMU has exited
	default:
		return 0, false
	}
	if strings.Contains(i.qemuLog.String(), "Attempted to kill init! exitcode=0x00000009") {
		return 1, true
	}
	return 0, false
}

// destroy ends the VM now.
func (i *instance) destroy() {
	i.destroyed.Store(true)
	if i.proc == nil {
		return
	}
	select {
	case <-i.exited:
	default:
		_ = i.proc.Kill()
		if i.cg != nil {
			i.cg.thaw()
		}
	}
}

// Close implements sandbox.Instance: the VM is thrown away whatever state it
// is in (nothing in it needs a clean shutdown), then its cgroup, run
// directory and record go.
func (i *instance) Close(ctx context.Context) error {
	return i.CloseOnce(func() (closeErr error) {
		defer i.ident.Release()
		if i.conn != nil {
			i.conn.Close()
		}
		if i.proc != nil {
			select {
			case <-i.exited:
			default:
				_ = i.proc.Kill()
				if i.cg != nil {
					i.cg.thaw() // a paused session's VM
				}
			}
			<-i.exited
		}
		if i.cg != nil {
			i.cg.remove()
		}
		if i.recorded {
			if err := os.Remove(i.rt.recordPath(i.id)); err != nil && !errors.Is(err, os.ErrNotExist) {
				closeErr = fmt.Errorf("remove sandbox record: %w", err)
			}
		}
		if closeErr != nil {
			i.rt.log.Warn("remove sandbox", "sandbox", i.id, "err", closeErr)
		}
		return closeErr
	})
}

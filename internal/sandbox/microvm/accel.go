package microvm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/textclip"
)

// The accelerator. With Accel auto, KVM is tried when /dev/kvm is open to a
// group (QEMU never runs as root; it gets that group): the first boot decides (a KVM that cannot boot this guest — a
// nested KVM that runs only its own guest kernels, say — fails it within
// kvmProbeTimeout) and the verdict is kept in CacheDir for this host kernel
// and guest, so it is paid once. Without KVM the VM runs on QEMU's software
// CPU (TCG): correct, isolated the same way, but ten to a hundred times
// slower, so the runtime warns that it is for development and tests only.

// accelVerdict is the file of the decision.
const accelVerdict = "accel.json"

type verdict struct {
	HostRelease string `json:"host_release"`
	Guest       string `json:"guest"`
	Accel       string `json:"accel"`
	Reason      string `json:"reason,omitempty"`
}

func hostRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// kvmGroup is the group through which QEMU, running as a sandbox's own
// uid, may open /dev/kvm (Debian: root:kvm 0660); ok is false when the
// device is missing or open to root alone, and KVM then cannot be used.
func kvmGroup() (gid uint32, ok bool) {
	var st unix.Stat_t
	if err := unix.Stat("/dev/kvm", &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return 0, false
	}
	if st.Mode&0o060 != 0o060 || st.Gid == 0 {
		return 0, false
	}
	return st.Gid, true
}

// accelerator returns the accelerator for the next boot.
func (r *Runtime) accelerator() string {
	r.accelOnce.Do(func() {
		switch r.opts.Accel {
		case AccelKVM, AccelTCG:
			r.accel = r.opts.Accel
		default:
			r.accel = AccelTCG
			if _, ok := kvmGroup(); ok {
				r.accel = AccelKVM
				if v, ok := r.readVerdict(); ok {
					r.accel = v.Accel
				}
			}
		}
		if r.accel == AccelTCG {
			r.warnTCG("")
		}
	})
	r.accelMu.Lock()
	defer r.accelMu.Unlock()
	return r.accel
}

// kvmUndecided says the next KVM boot is the probe.
func (r *Runtime) kvmUndecided() bool {
	r.accelMu.Lock()
	defer r.accelMu.Unlock()
	return !r.decided && r.opts.Accel == AccelAuto
}

// decide records the probe's outcome.
func (r *Runtime) decide(accel string, cause error) {
	r.accelMu.Lock()
	if r.decided {
		r.accelMu.Unlock()
		return
	}
	r.decided, r.accel = true, accel
	r.accelMu.Unlock()
	v := verdict{HostRelease: hostRelease(), Guest: r.guest.Hash, Accel: accel}
	if cause != nil {
		v.Reason = firstLine(cause.Error())
		r.warnTCG("KVM did not boot the guest: " + v.Reason)
	}
	if b, err := json.Marshal(v); err == nil {
		_ = os.WriteFile(filepath.Join(r.opts.CacheDir, accelVerdict), b, 0o644)
	}
}

func (r *Runtime) readVerdict() (verdict, bool) {
	var v verdict
	b, err := os.ReadFile(filepath.Join(r.opts.CacheDir, accelVerdict))
	if err != nil || json.Unmarshal(b, &v) != nil {
		return v, false
	}
	if v.HostRelease != hostRelease() || v.Guest != r.guest.Hash || (v.Accel != AccelKVM && v.Accel != AccelTCG) {
		return v, false
	}
	r.decided = true
	return v, true
}

func (r *Runtime) warnTCG(why string) {
	msg := "microvm: no usable KVM here: VMs run on QEMU's software CPU (TCG), which is for development and tests only (boots take seconds, jobs run many times slower)"
	if why != "" {
		r.log.Warn(msg, "reason", why)
		return
	}
	r.log.Warn(msg)
}

// Accel returns the accelerator VMs boot with (after the first boot, the
// probe's verdict).
func (r *Runtime) Accel() string { return r.accelerator() }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return textclip.Head(s, 300, "")
}

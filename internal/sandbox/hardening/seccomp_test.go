package hardening

import (
	"bytes"
	"encoding/json"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// allowed says whether the profile lets a syscall through with the given
// first argument: some ALLOW rule names it and all of its conditions on
// argument 0 hold (the only argument the default profile tests for the calls
// checked here).
func allowed(t *testing.T, p *specs.LinuxSeccomp, name string, arg0 uint64) bool {
	t.Helper()
	for _, r := range p.Syscalls {
		if r.Action != specs.ActAllow || !slices.Contains(r.Names, name) {
			continue
		}
		ok := true
		for _, a := range r.Args {
			if a.Index != 0 {
				t.Fatalf("%s: rule tests argument %d; extend allowed()", name, a.Index)
			}
			switch a.Op {
			case specs.OpEqualTo:
				ok = ok && arg0 == a.Value
			case specs.OpNotEqual:
				ok = ok && arg0 != a.Value
			case specs.OpLessThan:
				ok = ok && arg0 < a.Value
			case specs.OpMaskedEqual:
				ok = ok && arg0&a.Value == a.ValueTwo
			default:
				t.Fatalf("%s: operator %s; extend allowed()", name, a.Op)
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func profile(t *testing.T) *specs.LinuxSeccomp {
	t.Helper()
	p, err := SeccompOCI()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every denied syscall is refused with EPERM by an explicit rule, and no
// other rule names it.
func TestSeccompDenials(t *testing.T) {
	p := profile(t)
	if p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != uint(syscall.EPERM) {
		t.Fatalf("default action %s errno %v, want SCMP_ACT_ERRNO EPERM", p.DefaultAction, p.DefaultErrnoRet)
	}
	denied := DeniedSyscalls()
	var explicit *specs.LinuxSyscall
	for i, r := range p.Syscalls {
		if r.Action == specs.ActErrno && slices.Equal(r.Names, denied) {
			explicit = &p.Syscalls[i]
			continue
		}
		for _, n := range r.Names {
			if slices.Contains(denied, n) {
				t.Errorf("denied %s is also in a %s rule", n, r.Action)
			}
		}
	}
	if explicit == nil {
		t.Fatalf("no explicit denial rule for %v", denied)
	}
	if explicit.ErrnoRet == nil || *explicit.ErrnoRet != uint(syscall.EPERM) || len(explicit.Args) != 0 {
		t.Fatalf("denial rule %+v, want EPERM without conditions", explicit)
	}
	for _, n := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "kexec_load",
		"kexec_file_load", "init_module", "finit_module", "delete_module", "perf_event_open", "bpf", "keyctl",
		"add_key", "request_key", "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr"} {
		if !slices.Contains(denied, n) {
			t.Errorf("%s missing from the denial list", n)
		}
		if allowed(t, p, n, 0) {
			t.Errorf("%s allowed", n)
		}
	}
}

// The profile is still the upstream allowlist: what every job needs passes,
// what the upstream default refuses to a process without capabilities stays
// refused — including what Docker 20.10's engine default let through.
func TestSeccompUpstreamBase(t *testing.T) {
	p := profile(t)
	for _, n := range []string{"read", "write", "openat", "execve", "wait4", "mmap", "futex", "ptrace", "inotify_init1", "mq_open"} {
		if !allowed(t, p, n, 0) {
			t.Errorf("%s refused: the profile lost the upstream allowlist", n)
		}
	}
	const cloneThread = syscall.CLONE_VM | syscall.CLONE_FS | syscall.CLONE_FILES | syscall.CLONE_SIGHAND | syscall.CLONE_THREAD
	if !allowed(t, p, "clone", cloneThread) {
		t.Error("clone of a thread refused")
	}
	if allowed(t, p, "clone", syscall.CLONE_NEWUSER) {
		t.Error("clone into a new user namespace allowed")
	}
	for _, n := range []string{"mount", "umount2", "unshare", "setns", "chroot", "reboot", "syslog", "open_by_handle_at", "pivot_root", "swapon", "acct"} {
		if allowed(t, p, n, 0) {
			t.Errorf("%s allowed to a process without capabilities", n)
		}
	}
	// Socket families: the common ones pass, the ones the upstream default
	// keeps from every container (Docker 20.10's engine allowed them all) do not.
	for _, af := range []uint64{syscall.AF_UNIX, syscall.AF_INET, syscall.AF_INET6, syscall.AF_NETLINK} {
		if !allowed(t, p, "socket", af) {
			t.Errorf("socket family %d refused", af)
		}
	}
	for _, af := range []uint64{syscall.AF_AX25, syscall.AF_IPX, syscall.AF_APPLETALK, syscall.AF_DECnet, syscall.AF_IRDA, syscall.AF_CAIF, syscall.AF_ALG, 40 /* AF_VSOCK */} {
		if allowed(t, p, "socket", af) {
			t.Errorf("socket family %d allowed", af)
		}
	}
}

// The JSON is a valid engine-format profile: it decodes into the engine's own
// profile type with no field left over, and uses no field Docker 20.10's
// engine (API 1.41) does not know, so the engine cannot silently drop a rule.
func TestSeccompJSONIsEngineFormat(t *testing.T) {
	b, err := SeccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var engine seccomp.Seccomp
	if err := dec.Decode(&engine); err != nil {
		t.Fatalf("not an engine profile: %v", err)
	}
	var raw struct {
		Top      map[string]json.RawMessage
		Syscalls []map[string]json.RawMessage `json:"syscalls"`
	}
	if err := json.Unmarshal(b, &raw.Top); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	known := []string{"defaultAction", "defaultErrnoRet", "architectures", "syscalls"}
	for k := range raw.Top {
		if !slices.Contains(known, k) {
			t.Errorf("top-level field %q is not in Docker 20.10's profile format", k)
		}
	}
	for _, r := range raw.Syscalls {
		for k := range r {
			if !slices.Contains([]string{"names", "action", "errnoRet", "args"}, k) {
				t.Errorf("rule field %q is not in Docker 20.10's profile format", k)
			}
		}
	}
	if len(engine.Syscalls) != len(raw.Syscalls) || len(engine.Architectures) == 0 {
		t.Fatalf("engine decoded %d rules and %d architectures from %d", len(engine.Syscalls), len(engine.Architectures), len(raw.Syscalls))
	}
}

// Both forms are one profile: the OCI section re-encodes to the same bytes,
// and building twice gives the same bytes.
func TestSeccompFormsAgree(t *testing.T) {
	b1, err := SeccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	b2, err := SeccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatal("two builds differ")
	}
	again, err := json.Marshal(profile(t))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(b1), string(again)); diff != "" {
		t.Fatalf("OCI form differs from the JSON (-json +oci):\n%s", diff)
	}
}

func TestMaskedPathsKeepEngineDefaults(t *testing.T) {
	m := MaskedPaths()
	// Docker 20.10's engine defaults: a HostConfig list replaces them.
	for _, p := range []string{"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"} {
		if !slices.Contains(m, p) {
			t.Errorf("engine default %s missing", p)
		}
	}
	for _, p := range []string{"/proc/config.gz", "/sys/kernel/btf", "/sys/kernel/vmcoreinfo", "/proc/kallsyms", "/proc/cmdline", "/sys/kernel/notes", "/sys/kernel/boot_params"} {
		if !slices.Contains(m, p) {
			t.Errorf("%s not masked", p)
		}
	}
	r := ReadonlyPaths()
	for _, p := range []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"} {
		if !slices.Contains(r, p) {
			t.Errorf("engine default read-only %s missing", p)
		}
	}
}

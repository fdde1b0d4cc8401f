package securitytest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/sandbox"
)

// probe is one raw syscall made inside the sandbox. Its arguments are chosen
// so that, were the syscall let through to the kernel, it would fail with an
// error of its own (EINVAL, EFAULT, EBADF, EOPNOTSUPP, EAFNOSUPPORT) or
// succeed harmlessly — never with the EPERM a seccomp denial gives. Some of
// the kernel's own checks (CAP_SYS_MODULE, CAP_SYS_BOOT, may_mount) also
// answer EPERM; those probes cannot tell the filter from the kernel, and the
// unit tests of internal/sandbox/hardening pin that the profile refuses them.
type probe struct {
	name string
	nr   int    // x86_64 syscall number
	args string // Python expressions, passed as C longs (None is NULL)
}

// seccompClasses are the syscall classes of SECURITY.md M1.
var seccompClasses = []struct {
	class  string
	probes []probe
}{
	{"io_uring", []probe{
		{"io_uring_setup", 425, "0, None"},              // EFAULT: no params
		{"io_uring_enter", 426, "-1, 0, 0, 0, None, 0"}, // EBADF
		{"io_uring_register", 427, "-1, 0, None, 0"},    // EBADF
	}},
	{"userfaultfd", []probe{
		// UFFD_USER_MODE_ONLY passes the kernel's own permission check; the
		// unknown bit 2 then gives EINVAL.
		{"userfaultfd", 323, "3"},
	}},
	{"kexec", []probe{
		{"kexec_load", 246, "0, 0, None, 0"},
		{"kexec_file_load", 320, "-1, -1, 0, None, 0"},
	}},
	{"modules", []probe{
		{"init_module", 175, "None, 0, None"},
		{"finit_module", 313, "-1, None, 0"},
		{"delete_module", 176, "None, 0"},
	}},
	{"perf_event_open", []probe{
		{"perf_event_open", 298, "None, 0, -1, -1, 0"}, // EFAULT: no attr
	}},
	{"bpf", []probe{
		{"bpf", 321, "0, None, 0"},
	}},
	{"keyring", []probe{
		{"keyctl", 250, "9999, 0, 0, 0, 0"},         // EOPNOTSUPP: no such operation
		{"add_key", 248, "None, None, None, 0, 0"},  // EFAULT
		{"request_key", 249, "None, None, None, 0"}, // EFAULT
	}},
	{"new_mount_api", []probe{
		{"fsopen", 430, "None, 0"},
		{"fsconfig", 431, "-1, 9999, None, None, 0"}, // EINVAL
		{"fsmount", 432, "-1, 0, 0"},
		{"fspick", 433, "-1, None, 0xffff"},
		{"open_tree", 428, "-1, None, 0xffffffff"}, // EINVAL: flags
		{"move_mount", 429, "-1, None, -1, None, 0xffffffff"},
		{"mount_setattr", 442, "-1, None, 0xffffffff, None, 0"}, // EINVAL: flags
	}},
	// Address families the upstream default lets no container open (Docker
	// 20.10's engine default allowed every family but these are obsolete or
	// reach past the network namespace: AF_VSOCK talks to the hypervisor,
	// AF_ALG to the kernel's crypto code). Allowed, the kernel would create
	// the socket or answer EAFNOSUPPORT.
	{"socket_families", []probe{
		{"socket_ax25", 41, "3, 2, 0"},
		{"socket_ipx", 41, "4, 2, 0"},
		{"socket_appletalk", 41, "5, 2, 0"},
		{"socket_decnet", 41, "12, 5, 0"},
		{"socket_irda", 41, "23, 1, 0"},
		{"socket_caif", 41, "37, 1, 0"},
		{"socket_alg", 41, "38, 5, 0"},
		{"socket_vsock", 41, "40, 1, 0"},
	}},
}

// controlProbes are allowed syscalls with the same harness, so that a broken
// harness (errno lost, every call reported refused) fails the test instead of
// passing it.
var controlProbes = []struct {
	p    probe
	want string
}{
	{probe{"control_dup_bad_fd", 32, "-1"}, "EBADF"},
	{probe{"control_getppid", 110, ""}, "ok"},
	{probe{"control_socket_unix", 41, "1, 1, 0"}, "ok"},
}

func probeProgram(probes []probe) string {
	var b strings.Builder
	b.WriteString(`import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if a is not None else ctypes.c_void_p(None) for a in args])
    e = ctypes.get_errno()
    print("%s=%s" % (name, "ok" if r >= 0 else errno.errorcode.get(e, str(e))))
`)
	for _, p := range probes {
		fmt.Fprintf(&b, "call(%q, %d%s)\n", p.name, p.nr, prefixComma(p.args))
	}
	return b.String()
}

func prefixComma(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

// m1Seccomp returns the case for one syscall class: each of its syscalls is
// refused (EPERM from the filter, or ENOSYS where the kernel lacks it), while
// the control syscalls behave as the kernel makes them.
func (s *suite) m1Seccomp(class string, probes []probe) func(t *testing.T) {
	return func(t *testing.T) {
		all := append([]probe(nil), probes...)
		for _, c := range controlProbes {
			all = append(all, c.p)
		}
		res := s.py(t, probeProgram(all), sandbox.Limits{})
		wantStatus(t, res, sandbox.StatusOK)
		got := kv(res)
		for _, c := range controlProbes {
			if got[c.p.name] != c.want {
				t.Fatalf("control %s = %q, want %q: the probe cannot tell refused from allowed: %s", c.p.name, got[c.p.name], c.want, short(res))
			}
		}
		for _, p := range probes {
			switch v := got[p.name]; v {
			case "EPERM", "ENOSYS":
			case "":
				t.Errorf("%s: no answer: %s", p.name, short(res))
			default:
				t.Errorf("%s (%s) reached the kernel: %s, want EPERM from the seccomp profile", p.name, class, v)
			}
		}
	}
}

// m4HostInformation: what the host kernel tells about itself beyond uname —
// its build configuration, type information, crash-dump layout, build id,
// symbol table, boot command line and boot parameters — is empty or
// unreadable in the sandbox.
func (s *suite) m4HostInformation(t *testing.T) {
	res := s.py(t, `
import errno, hashlib, os
def read(p):
    try:
        with open(p, "rb") as f:
            return "len%d" % len(f.read(1 << 20))
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def sha(p):
    try:
        with open(p, "rb") as f:
            return hashlib.sha256(f.read(1 << 20)).hexdigest()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
for name, p in (("config_gz", "/proc/config.gz"), ("btf_vmlinux", "/sys/kernel/btf/vmlinux"),
                ("vmcoreinfo", "/sys/kernel/vmcoreinfo"), ("kallsyms", "/proc/kallsyms"),
                ("cmdline", "/proc/cmdline"), ("notes", "/sys/kernel/notes"),
                ("boot_params", "/sys/kernel/boot_params/data")):
    print("%s=%s" % (name, read(p)))
print("cmdline_sha=%s" % sha("/proc/cmdline"))
try:
    print("btf_dir=len%d" % len(os.listdir("/sys/kernel/btf")))
except OSError as e:
    print("btf_dir=%s" % errno.errorcode.get(e.errno, str(e.errno)))
`, sandbox.Limits{})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	for _, k := range []string{"config_gz", "btf_vmlinux", "vmcoreinfo", "kallsyms", "cmdline", "notes", "boot_params", "btf_dir"} {
		switch v := got[k]; {
		case v == "len0", v == "EACCES", v == "EPERM", v == "ENOENT":
		case k == "cmdline" && s.tgt.OwnKernel && got["cmdline_sha"] != hostSHA("/proc/cmdline"):
			// The sandbox's own kernel's command line (gVisor's sentry
			// makes one up), not the host's.
		case v == "":
			t.Errorf("%s: no answer: %s", k, short(res))
		default:
			t.Errorf("%s readable in the sandbox: %s", k, v)
		}
	}
}

// suiteCase is the element type of Run's case list.
type suiteCase = struct {
	name string
	fn   func(t *testing.T)
}

// kernelCases are the cases of SECURITY.md section M that run inside a sandbox.
func (s *suite) kernelCases() []suiteCase {
	var out []suiteCase
	for _, c := range seccompClasses {
		out = append(out, suiteCase{"M1_seccomp_" + c.class, s.m1Seccomp(c.class, c.probes)})
	}
	return append(out, suiteCase{"M4_host_information", s.m4HostInformation}, suiteCase{"M5_kernel_is_not_the_hosts", s.m5OwnKernel})
}

// m5OwnKernel: on a runtime that gives each sandbox a kernel of its own
// (gVisor's sentry, a virtual machine's guest), the kernel the job talks to
// is not the host's: its release, version string and boot command line all
// differ from the host's. Where sandboxes share the host's kernel the case
// cannot hold, and says so.
func (s *suite) m5OwnKernel(t *testing.T) {
	if !s.tgt.OwnKernel {
		t.Skip("does not hold on this runtime: its sandboxes share the host's kernel (docs/sandbox.md, \"Isolation tiers\")")
	}
	res := s.py(t, `
import hashlib, os
print("release=%s" % os.uname().release)
print("version_sha=%s" % hashlib.sha256(open("/proc/version", "rb").read()).hexdigest())
print("version=%s" % open("/proc/version").read().strip())
`, sandbox.Limits{})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	host := unix.ByteSliceToString(u.Release[:])
	if got["release"] == "" || got["release"] == host {
		t.Errorf("uname -r in the sandbox is %q, the host's is %q: the same kernel", got["release"], host)
	}
	if got["version_sha"] == "" || got["version_sha"] == hostSHA("/proc/version") {
		t.Errorf("/proc/version in the sandbox is the host's: %s", got["version"])
	}
	t.Logf("the sandbox's kernel: %s (host: %s)", got["version"], host)
}

// hostSHA is the hex SHA-256 of a host file's first MiB ("" when unreadable).
func hostSHA(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, 1<<20)); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

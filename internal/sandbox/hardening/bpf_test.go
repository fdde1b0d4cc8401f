package hardening

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// call is one seccomp_data: a syscall number, an architecture, arguments.
type call struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// run executes f on c in x/net/bpf's interpreter. Its loads are big-endian
// (network order) where the kernel's are native, so every 32-bit word is
// written big-endian at the offset the kernel reads it from.
func run(t *testing.T, f Filter, c call) uint32 {
	t.Helper()
	raw := make([]bpf.Instruction, len(f))
	for i, in := range f {
		raw[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble()
	}
	vm, err := bpf.NewVM(raw)
	if err != nil {
		t.Fatalf("program refused by the interpreter: %v", err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offNr:], c.nr)
	binary.BigEndian.PutUint32(data[offArch:], c.arch)
	for i, a := range c.args {
		binary.BigEndian.PutUint32(data[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[offArgs+8*i+4:], uint32(a>>32))
	}
	out, err := vm.Run(data)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return uint32(out)
}

func x86(nr uint32, args ...uint64) call {
	c := call{nr: nr, arch: unix.AUDIT_ARCH_X86_64}
	copy(c.args[:], args)
	return c
}

func nrOf(t *testing.T, name string) uint32 {
	t.Helper()
	nr, ok := syscallNumbersAMD64[name]
	if !ok {
		t.Fatalf("no number for %s", name)
	}
	return nr
}

const (
	allow = uint32(unix.SECCOMP_RET_ALLOW)
	eperm = unix.SECCOMP_RET_ERRNO | uint32(syscall.EPERM)
)

// TestCompiledProfile runs the compiled Aster profile on the calls whose
// answer the profile fixes.
func TestCompiledProfile(t *testing.T) {
	p, err := SeccompOCI()
	if err != nil {
		t.Fatal(err)
	}
	f, err := CompileSeccomp(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d instructions", len(f))

	// Every name allowed without conditions is allowed, whatever its arguments.
	n := 0
	for _, r := range p.Syscalls {
		if r.Action != specs.ActAllow || len(r.Args) > 0 {
			continue
		}
		for _, name := range r.Names {
			nr, ok := syscallNumbersAMD64[name]
			if !ok {
				continue
			}
			n++
			if got := run(t, f, x86(nr, 1<<40, 7)); got != allow {
				t.Errorf("%s: %#x, want allow", name, got)
			}
		}
	}
	if n < 250 {
		t.Fatalf("only %d unconditional names checked", n)
	}
	for _, name := range DeniedSyscalls() {
		if got := run(t, f, x86(nrOf(t, name))); got != eperm {
			t.Errorf("%s: %#x, want EPERM", name, got)
		}
	}
	clone, personality, socket := nrOf(t, "clone"), nrOf(t, "personality"), nrOf(t, "socket")
	cases := []struct {
		name string
		c    call
		want uint32
	}{
		{"clone3 answers ENOSYS (glibc falls back to clone)", x86(nrOf(t, "clone3")), unix.SECCOMP_RET_ERRNO | uint32(syscall.ENOSYS)},
		{"clone of a thread", x86(clone, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD), allow},
		{"clone of a process", x86(clone, uint64(syscall.SIGCHLD)), allow},
		{"clone with bits only in the high word", x86(clone, 1<<40|uint64(syscall.SIGCHLD)), allow},
		{"clone into a user namespace", x86(clone, unix.CLONE_NEWUSER|uint64(syscall.SIGCHLD)), eperm},
		{"clone into a mount namespace", x86(clone, unix.CLONE_NEWNS), eperm},
		{"clone into a network namespace", x86(clone, unix.CLONE_NEWNET), eperm},
		{"personality query", x86(personality, 0xffffffff), allow},
		{"personality linux", x86(personality, 0), allow},
		{"personality linux32", x86(personality, 8), allow},
		{"personality with a high word", x86(personality, 1<<32|8), eperm},
		{"personality read-implies-exec", x86(personality, 0x0400000), eperm},
		{"socket AF_UNIX", x86(socket, unix.AF_UNIX), allow},
		{"socket AF_INET", x86(socket, unix.AF_INET), allow},
		{"socket AF_INET6", x86(socket, unix.AF_INET6), allow},
		{"socket AF_NETLINK", x86(socket, unix.AF_NETLINK), allow},
		{"socket AF_VSOCK", x86(socket, unix.AF_VSOCK), eperm},
		{"socket AF_AX25", x86(socket, unix.AF_AX25), eperm},
		{"socket AF_UNIX with a high word", x86(socket, 1<<32|unix.AF_UNIX), eperm},
		{"a number no table has", x86(1000), eperm},
		{"the x32 table", x86(x32SyscallBit | nrOf(t, "getpid")), eperm},
		{"the i386 table", call{nr: 20, arch: unix.AUDIT_ARCH_I386}, eperm},
		{"getpid", x86(nrOf(t, "getpid")), allow},
	}
	for _, tc := range cases {
		if got := run(t, f, tc.c); got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
}

// TestCompileOperators checks every comparison at and around its bounds,
// in both 32-bit words, against a plain 64-bit evaluation.
func TestCompileOperators(t *testing.T) {
	const v = 0x1_0000_0005
	ops := []struct {
		op   specs.LinuxSeccompOperator
		two  uint64
		eval func(a uint64) bool
	}{
		{specs.OpEqualTo, 0, func(a uint64) bool { return a == v }},
		{specs.OpNotEqual, 0, func(a uint64) bool { return a != v }},
		{specs.OpGreaterThan, 0, func(a uint64) bool { return a > v }},
		{specs.OpGreaterEqual, 0, func(a uint64) bool { return a >= v }},
		{specs.OpLessThan, 0, func(a uint64) bool { return a < v }},
		{specs.OpLessEqual, 0, func(a uint64) bool { return a <= v }},
		{specs.OpMaskedEqual, 0x1_0000_0001, func(a uint64) bool { return a&v == 0x1_0000_0001 }},
	}
	values := []uint64{0, 1, 4, 5, 6, 0xffffffff, 1 << 32, v - 1, v, v + 1, 0x1_ffff_ffff, 2 << 32, 2<<32 | 5, 1<<63 | 5, ^uint64(0)}
	ret := unix.SECCOMP_RET_ERRNO | uint32(syscall.EACCES)
	for _, o := range ops {
		p := &specs.LinuxSeccomp{
			DefaultAction: specs.ActAllow,
			Syscalls: []specs.LinuxSyscall{{
				Names:    []string{"read"},
				Action:   specs.ActErrno,
				ErrnoRet: ptr(uint(syscall.EACCES)),
				// Two conditions: the one under test on argument 2, and one that
				// always holds on argument 0, so that both are checked (and).
				Args: []specs.LinuxSeccompArg{{Index: 0, Value: 3, Op: specs.OpEqualTo}, {Index: 2, Value: v, ValueTwo: o.two, Op: o.op}},
			}},
		}
		f, err := CompileSeccomp(p)
		if err != nil {
			t.Fatalf("%s: %v", o.op, err)
		}
		for _, a := range values {
			want := allow
			if o.eval(a) {
				want = ret
			}
			if got := run(t, f, x86(0, 3, 0, a)); got != want {
				t.Errorf("%s %#x: %#x, want %#x", o.op, a, got, want)
			}
			// The first condition fails: the rule does not apply.
			if got := run(t, f, x86(0, 4, 0, a)); got != allow {
				t.Errorf("%s %#x with arg0 4: %#x, want allow", o.op, a, got)
			}
		}
		// Another syscall is not concerned.
		if got := run(t, f, x86(1, 3, 0, v)); got != allow {
			t.Errorf("%s: write: %#x", o.op, got)
		}
	}
}

// TestCompileLongBlock checks a block longer than a conditional jump
// reaches (the long jump over it) and first-match order between rules.
func TestCompileLongBlock(t *testing.T) {
	var rules []specs.LinuxSyscall
	for i := range 100 {
		rules = append(rules, specs.LinuxSyscall{Names: []string{"ioctl"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 1, Value: uint64(i), Op: specs.OpEqualTo}}})
	}
	rules = append(rules, specs.LinuxSyscall{Names: []string{"ioctl"}, Action: specs.ActKillProcess, Args: []specs.LinuxSeccompArg{{Index: 1, Value: 50, Op: specs.OpGreaterEqual}}})
	rules = append(rules, specs.LinuxSyscall{Names: []string{"getpid", "no_such_syscall"}, Action: specs.ActAllow})
	f, err := CompileSeccomp(&specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: rules})
	if err != nil {
		t.Fatal(err)
	}
	if len(f) < 300 {
		t.Fatalf("%d instructions: the block is not longer than a conditional jump", len(f))
	}
	ioctl := nrOf(t, "ioctl")
	for _, tc := range []struct {
		c    call
		want uint32
	}{
		{x86(ioctl, 0, 0), allow},
		{x86(ioctl, 0, 99), allow},
		{x86(ioctl, 0, 100), unix.SECCOMP_RET_KILL_PROCESS},
		{x86(ioctl, 0, 1<<32), unix.SECCOMP_RET_KILL_PROCESS},
		{x86(nrOf(t, "getpid")), allow},
		{x86(nrOf(t, "getppid")), eperm},
	} {
		if got := run(t, f, tc.c); got != tc.want {
			t.Errorf("%+v: %#x, want %#x", tc.c, got, tc.want)
		}
	}
}

func TestCompileRefuses(t *testing.T) {
	for name, p := range map[string]*specs.LinuxSeccomp{
		"nil":            nil,
		"notify":         {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActNotify}}},
		"trace default":  {DefaultAction: specs.ActTrace},
		"argument index": {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 6, Op: specs.OpEqualTo}}}}},
		"operator":       {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Op: "SCMP_CMP_ALMOST"}}}}},
		"errno range":    {DefaultAction: specs.ActErrno, DefaultErrnoRet: ptr(uint(70000))},
		"mixed rules": {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read"}, Action: specs.ActAllow},
			{Names: []string{"read"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpEqualTo}}},
		}},
	} {
		if _, err := CompileSeccomp(p); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

// TestInstallSeccompOnThisKernel installs the compiled profile in a child
// process (this test binary, run again) and makes the refused and allowed
// calls for real.
func TestInstallSeccompOnThisKernel(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the syscall table is x86_64's")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeccompChild$", "-test.v")
	cmd.Env = append(os.Environ(), "HARDENING_SECCOMP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && strings.HasPrefix(k, "call ") {
			got[strings.TrimPrefix(k, "call ")] = v
		}
	}
	want := map[string]string{
		"status.Seccomp":    "2",
		"status.NoNewPrivs": "1",
		"getpid":            "ok",
		"socket_inet":       "ok",
		"socket_vsock":      syscall.EPERM.Error(),
		"keyctl":            syscall.EPERM.Error(),
		"io_uring_setup":    syscall.EPERM.Error(),
		"unshare_user":      syscall.EPERM.Error(),
		"personality_bad":   syscall.EPERM.Error(),
		"clone3":            syscall.ENOSYS.Error(),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if t.Failed() {
		t.Logf("child output:\n%s", out)
	}
}

// TestSeccompChild is the child's side of TestInstallSeccompOnThisKernel.
func TestSeccompChild(t *testing.T) {
	if os.Getenv("HARDENING_SECCOMP_CHILD") != "1" {
		t.Skip("run by TestInstallSeccompOnThisKernel")
	}
	f, err := SeccompFilter()
	if err != nil {
		t.Fatal(err)
	}
	if err := InstallSeccomp(f); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && slices.Contains([]string{"Seccomp", "NoNewPrivs"}, k) {
			fmt.Printf("call status.%s=%s\n", k, strings.TrimSpace(v))
		}
	}
	report := func(name string, errno syscall.Errno) {
		if errno == 0 {
			fmt.Printf("call %s=ok\n", name)
			return
		}
		fmt.Printf("call %s=%s\n", name, errno.Error())
	}
	sys := func(nr uintptr, a ...uintptr) syscall.Errno {
		a = append(a, 0, 0, 0, 0, 0, 0)
		_, _, e := syscall.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return e
	}
	report("getpid", sys(unix.SYS_GETPID))
	fd, _, e := syscall.RawSyscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, 0)
	report("socket_inet", e)
	if e == 0 {
		syscall.Close(int(fd))
	}
	report("socket_vsock", sys(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM, 0))
	report("keyctl", sys(unix.SYS_KEYCTL, 0, 0))
	report("io_uring_setup", sys(unix.SYS_IO_URING_SETUP, 1, 0))
	report("unshare_user", sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER))
	report("personality_bad", sys(unix.SYS_PERSONALITY, 0x0400000))
	report("clone3", sys(unix.SYS_CLONE3, 0, 0))
}

func ptr[T any](v T) *T { return &v }

// BenchmarkSeccompFilter is what the microvm trampoline pays per job before
// it executes the job: build the profile for this kernel and compile it.
func BenchmarkSeccompFilter(b *testing.B) {
	for b.Loop() {
		if _, err := SeccompFilter(); err != nil {
			b.Fatal(err)
		}
	}
}

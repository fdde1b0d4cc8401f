package hardening

import (
	"fmt"
	"slices"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The seccomp compiler: where no container runtime applies the profile (the
// microvm guest, whose init starts the job itself), the profile is turned
// into a classic BPF program here and installed by the job's own trampoline
// (Install) right before it executes the job.
//
// The program checks, in order:
//  1. the architecture: anything but x86_64 (i386 through int 0x80) gets the
//     profile's default action — stricter than a container runtime, which
//     also admits the i386 and x32 tables the profile names;
//  2. the x32 bit in the syscall number: the default action;
//  3. each syscall the profile names, one block per number: an
//     unconditional rule answers at once; conditional rules are tried in
//     the profile's order (every condition of a rule must hold, as in
//     libseccomp), the first that holds answers, none: the default action;
//  4. any other number: the default action.
// Names the table does not know (a syscall of another architecture, or
// newer than golang.org/x/sys) are left out, as libseccomp leaves them out:
// they get the default action.

// seccomp_data offsets (linux/seccomp.h): nr, arch, instruction pointer,
// then six 64-bit arguments.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
	// x32SyscallBit marks the x32 ABI's syscall numbers on x86_64.
	x32SyscallBit = 0x40000000
	// maxProgram is the kernel's BPF_MAXINSNS.
	maxProgram = 4096
)

// Filter is a compiled seccomp program.
type Filter []unix.SockFilter

// CompileSeccomp compiles p for x86_64 (the only architecture with a syscall
// table here). It refuses what it cannot express exactly: another default
// action than an errno or kill, an action such as notify or trace, an
// unknown comparison, an argument index past 5, or a syscall with an
// unconditional rule beside other rules for it.
func CompileSeccomp(p *specs.LinuxSeccomp) (Filter, error) {
	if p == nil {
		return nil, fmt.Errorf("seccomp: no profile")
	}
	def, err := action(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("seccomp default action: %w", err)
	}
	type rule struct {
		args []specs.LinuxSeccompArg
		ret  uint32
	}
	byNr := map[uint32][]rule{}
	for _, r := range p.Syscalls {
		ret, err := action(r.Action, r.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("seccomp rule %v: %w", r.Names, err)
		}
		for _, a := range r.Args {
			if a.Index > 5 {
				return nil, fmt.Errorf("seccomp rule %v: argument index %d", r.Names, a.Index)
			}
			if _, ok := comparisons[a.Op]; !ok {
				return nil, fmt.Errorf("seccomp rule %v: comparison %q not supported", r.Names, a.Op)
			}
		}
		for _, name := range r.Names {
			nr, ok := syscallNumbersAMD64[name]
			if !ok {
				continue
			}
			byNr[nr] = append(byNr[nr], rule{args: r.Args, ret: ret})
		}
	}

	var a assembler
	a.load(offArch)
	a.jump(jeq, unix.AUDIT_ARCH_X86_64, skipOne, next)
	a.ret(def)
	a.load(offNr)
	a.jump(jge, x32SyscallBit, next, skipOne)
	a.ret(def)

	nrs := make([]uint32, 0, len(byNr))
	for nr := range byNr {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	for _, nr := range nrs {
		rules := byNr[nr]
		if len(rules) == 1 && len(rules[0].args) == 0 {
			// The common case, two instructions: jeq nr; ret.
			a.jump(jeq, nr, next, skipOne)
			a.ret(rules[0].ret)
			continue
		}
		for _, r := range rules {
			if len(r.args) == 0 {
				return nil, fmt.Errorf("seccomp: syscall %d has an unconditional rule beside %d others", nr, len(rules)-1)
			}
		}
		// jeq nr, else a long jump over the block; the block reloads what it
		// compares and ends in the default action, so it never falls out.
		other := a.newLabel()
		a.jump(jeq, nr, skipOne, next)
		a.longJump(other)
		for _, r := range rules {
			fail := a.newLabel()
			for _, c := range r.args {
				a.compare(c, fail)
			}
			a.ret(r.ret)
			a.bind(fail)
		}
		a.ret(def)
		a.bind(other)
		a.load(offNr)
	}
	a.ret(def)
	prog, err := a.resolve()
	if err != nil {
		return nil, err
	}
	if len(prog) > maxProgram {
		return nil, fmt.Errorf("seccomp: program of %d instructions, the kernel takes %d", len(prog), maxProgram)
	}
	return prog, nil
}

// action is the filter's return value for a profile action.
func action(act specs.LinuxSeccompAction, errnoRet *uint) (uint32, error) {
	switch act {
	case specs.ActAllow:
		return unix.SECCOMP_RET_ALLOW, nil
	case specs.ActErrno:
		errno := uint(syscall.EPERM)
		if errnoRet != nil {
			errno = *errnoRet
		}
		if errno > unix.SECCOMP_RET_DATA {
			return 0, fmt.Errorf("errno %d out of range", errno)
		}
		return unix.SECCOMP_RET_ERRNO | uint32(errno), nil
	case specs.ActKill, specs.ActKillThread:
		return unix.SECCOMP_RET_KILL_THREAD, nil
	case specs.ActKillProcess:
		return unix.SECCOMP_RET_KILL_PROCESS, nil
	case specs.ActTrap:
		return unix.SECCOMP_RET_TRAP, nil
	case specs.ActLog:
		return unix.SECCOMP_RET_LOG, nil
	}
	return 0, fmt.Errorf("action %q not supported", act)
}

// comparisons lists the operators compare implements.
var comparisons = map[specs.LinuxSeccompOperator]bool{
	specs.OpEqualTo: true, specs.OpNotEqual: true, specs.OpMaskedEqual: true,
	specs.OpGreaterThan: true, specs.OpGreaterEqual: true,
	specs.OpLessThan: true, specs.OpLessEqual: true,
}

// Jump codes, and the two targets that are not labels.
const (
	jeq = uint16(unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K)
	jgt = uint16(unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K)
	jge = uint16(unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K)
	ja  = uint16(unix.BPF_JMP | unix.BPF_JA)
	// next is the following instruction; skipOne the one after it.
	next    = -1
	skipOne = -2
)

// insn is an instruction whose jump targets are labels (or next, skipOne)
// until resolve.
type insn struct {
	f      unix.SockFilter
	jt, jf int
}

// assembler builds a program with forward jumps to labels.
type assembler struct {
	prog   []insn
	labels map[int]int
	last   int
}

func (a *assembler) newLabel() int {
	a.last++
	return a.last
}

func (a *assembler) bind(label int) {
	if a.labels == nil {
		a.labels = map[int]int{}
	}
	a.labels[label] = len(a.prog)
}

func (a *assembler) load(off uint32) {
	a.prog = append(a.prog, insn{f: unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}})
}

func (a *assembler) ret(v uint32) {
	a.prog = append(a.prog, insn{f: unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v}})
}

func (a *assembler) and(k uint32) {
	a.prog = append(a.prog, insn{f: unix.SockFilter{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: k}})
}

// jump compares A with k: true goes to jt, false to jf.
func (a *assembler) jump(code uint16, k uint32, jt, jf int) {
	a.prog = append(a.prog, insn{f: unix.SockFilter{Code: code, K: k}, jt: jt, jf: jf})
}

// longJump goes to label whatever the distance (ja takes a 32-bit offset).
func (a *assembler) longJump(label int) {
	a.prog = append(a.prog, insn{f: unix.SockFilter{Code: ja}, jt: label})
}

// compare goes on when the 64-bit argument c.Index compares true with
// c.Value (and c.ValueTwo for a mask), and jumps to fail otherwise. The
// argument is two 32-bit words, the low one first (little-endian).
func (a *assembler) compare(c specs.LinuxSeccompArg, fail int) {
	lo := offArgs + 8*uint32(c.Index)
	hi := lo + 4
	vlo, vhi := uint32(c.Value), uint32(c.Value>>32)
	holds := a.newLabel()
	switch c.Op {
	case specs.OpEqualTo:
		a.load(hi)
		a.jump(jeq, vhi, next, fail)
		a.load(lo)
		a.jump(jeq, vlo, next, fail)
	case specs.OpMaskedEqual:
		a.load(hi)
		a.and(vhi)
		a.jump(jeq, uint32(c.ValueTwo>>32), next, fail)
		a.load(lo)
		a.and(vlo)
		a.jump(jeq, uint32(c.ValueTwo), next, fail)
	case specs.OpNotEqual:
		a.load(hi)
		a.jump(jeq, vhi, next, holds)
		a.load(lo)
		a.jump(jeq, vlo, fail, next)
	case specs.OpGreaterThan, specs.OpGreaterEqual:
		// hi > vhi holds, hi < vhi fails, equal high words: the low ones.
		a.load(hi)
		a.jump(jgt, vhi, holds, next)
		a.jump(jeq, vhi, next, fail)
		a.load(lo)
		code := jgt
		if c.Op == specs.OpGreaterEqual {
			code = jge
		}
		a.jump(code, vlo, next, fail)
	case specs.OpLessThan, specs.OpLessEqual:
		// hi > vhi fails, hi < vhi holds, equal high words: the low ones.
		a.load(hi)
		a.jump(jgt, vhi, fail, next)
		a.jump(jeq, vhi, next, holds)
		a.load(lo)
		code := jge // lo >= vlo fails lt
		if c.Op == specs.OpLessEqual {
			code = jgt
		}
		a.jump(code, vlo, fail, next)
	}
	a.bind(holds)
}

// resolve turns targets into offsets; a conditional jump reaches at most
// 255 instructions ahead.
func (a *assembler) resolve() (Filter, error) {
	out := make(Filter, len(a.prog))
	for i, in := range a.prog {
		f := in.f
		if f.Code == ja {
			to, ok := a.labels[in.jt]
			if !ok {
				return nil, fmt.Errorf("seccomp: unbound label %d", in.jt)
			}
			f.K = uint32(to - i - 1)
			out[i] = f
			continue
		}
		if f.Code&0x07 == unix.BPF_JMP {
			for _, t := range []struct {
				target int
				off    *uint8
			}{{in.jt, &f.Jt}, {in.jf, &f.Jf}} {
				d := 0
				switch t.target {
				case next:
				case skipOne:
					d = 1
				default:
					to, ok := a.labels[t.target]
					if !ok {
						return nil, fmt.Errorf("seccomp: unbound label %d", t.target)
					}
					d = to - i - 1
				}
				if d < 0 || d > 255 {
					return nil, fmt.Errorf("seccomp: conditional jump of %d instructions", d)
				}
				*t.off = uint8(d)
			}
		}
		out[i] = f
	}
	return out, nil
}

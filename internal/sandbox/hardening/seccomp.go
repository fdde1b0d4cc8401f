// Package hardening is the kernel-facing confinement every sandbox runtime
// applies alike: one seccomp profile, one list of masked and one of read-only
// paths. The runtimes only translate it into their own API, so that a job
// meets the same kernel surface whichever runtime runs it (SECURITY.md M1, M4).
package hardening

//go:generate go run gen_syscalls.go

import (
	"encoding/json"
	"fmt"
	"slices"
	"syscall"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DeniedSyscalls are refused by name, with EPERM, whatever the upstream
// default profile allows now or later: interfaces with a long record of
// kernel privilege escalations (io_uring, userfaultfd, bpf, perf), ways to
// change the running kernel (kexec, modules), the keyring (not namespaced),
// and the new mount API. The upstream default already refuses most of them
// for a process without capabilities; Docker 20.10's engine default allows
// io_uring, so the docker runtime relied on that alone before this list.
func DeniedSyscalls() []string {
	return []string{
		"add_key",
		"bpf",
		"delete_module",
		"finit_module",
		"fsconfig",
		"fsmount",
		"fsopen",
		"fspick",
		"init_module",
		"io_uring_enter",
		"io_uring_register",
		"io_uring_setup",
		"kexec_file_load",
		"kexec_load",
		"keyctl",
		"mount_setattr",
		"move_mount",
		"open_tree",
		"perf_event_open",
		"request_key",
		"userfaultfd",
	}
}

// SeccompJSON builds the profile and returns it as JSON. The same bytes are
// the Docker API's inline profile (HostConfig.SecurityOpt "seccomp=<json>":
// the engine's profile format shares every field name used here with the OCI
// section) and, decoded, the linux.seccomp section of an OCI bundle. The
// result depends only on this machine's architecture and kernel version, so
// a runtime builds it once.
func SeccompJSON() ([]byte, error) { return profileJSON(nil) }

// SeccompOCI returns the profile as an OCI bundle section, decoded from
// SeccompJSON so that both forms are the same profile byte for byte.
func SeccompOCI() (*specs.LinuxSeccomp, error) { return decodeOCI(SeccompJSON()) }

// profileJSON builds the profile, lets adjust change it (nil: as built) and
// encodes it.
func profileJSON(adjust func(*specs.LinuxSeccomp)) ([]byte, error) {
	p, err := build()
	if err != nil {
		return nil, err
	}
	if adjust != nil {
		adjust(p)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("seccomp profile: %w", err)
	}
	return b, nil
}

// decodeOCI turns an encoded profile into an OCI bundle section.
func decodeOCI(b []byte, err error) (*specs.LinuxSeccomp, error) {
	if err != nil {
		return nil, err
	}
	var p specs.LinuxSeccomp
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("seccomp profile: %w", err)
	}
	return &p, nil
}

// build starts from the upstream default profile as it applies to a process
// with no capabilities at all (every syscall the engine gates behind a
// capability stays refused) and adds the explicit denials.
func build() (*specs.LinuxSeccomp, error) {
	probe := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}}
	p, err := seccomp.GetDefaultProfile(probe)
	if err != nil {
		return nil, fmt.Errorf("default seccomp profile: %w", err)
	}
	if p.DefaultAction != specs.ActErrno {
		// Everything below assumes an allowlist.
		return nil, fmt.Errorf("default seccomp profile: default action %s, want %s", p.DefaultAction, specs.ActErrno)
	}
	denied := DeniedSyscalls()
	// A denied name is taken out of every other rule, so that no rule with
	// another action competes with the denial (libseccomp keeps one action per
	// syscall and argument set).
	rules := p.Syscalls[:0]
	for _, r := range p.Syscalls {
		r.Names = slices.DeleteFunc(r.Names, func(n string) bool { return slices.Contains(denied, n) })
		if len(r.Names) > 0 {
			rules = append(rules, r)
		}
	}
	eperm := uint(syscall.EPERM)
	p.Syscalls = append(rules, specs.LinuxSyscall{Names: denied, Action: specs.ActErrno, ErrnoRet: &eperm})
	p.DefaultErrnoRet = &eperm
	return p, nil
}

// GVisorSeccompJSON is the profile as gVisor's runsc applies it inside its
// sentry (runsc --oci-seccomp): the same rules, except that a rule answering
// an errno other than EPERM allows the call instead. runsc answers every
// errno rule with EPERM whatever its errnoRet; the one such rule upstream
// answers clone3 with ENOSYS so that glibc falls back to clone, whose flags
// the profile can check, and an EPERM there makes every pthread_create fail.
// Under gVisor clone3 is the sentry's own implementation, never the host
// kernel's; the namespaces it could ask for are the sentry's too.
func GVisorSeccompJSON() ([]byte, error) {
	return profileJSON(func(p *specs.LinuxSeccomp) {
		eperm := uint(syscall.EPERM)
		for i, r := range p.Syscalls {
			if r.Action == specs.ActErrno && r.ErrnoRet != nil && *r.ErrnoRet != eperm {
				p.Syscalls[i].Action, p.Syscalls[i].ErrnoRet = specs.ActAllow, nil
			}
		}
	})
}

// GVisorSeccompOCI is GVisorSeccompJSON as an OCI bundle section.
func GVisorSeccompOCI() (*specs.LinuxSeccomp, error) { return decodeOCI(GVisorSeccompJSON()) }

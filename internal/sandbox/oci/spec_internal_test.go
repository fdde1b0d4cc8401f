package oci

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// TestBundleSpecHardening checks the config.json every sandbox gets, without
// a runtime: the hardening is fixed whatever the limits say.
func TestBundleSpecHardening(t *testing.T) {
	base, err := newSpecBase("")
	if err != nil {
		t.Fatal(err)
	}
	l := sandbox.Limits{TimeoutMS: 1000, MemoryBytes: 256 << 20, MilliCPUs: 1500, Pids: 64, WorkdirBytes: 8 << 20, TmpBytes: 4 << 20}
	deadline := time.Unix(1_900_000_000, 0)
	ident := runtimekit.Identity{Init: 1_900_000_010, Job: 1_900_000_011}
	s := base.bundleSpec(sandbox.PrepareOptions{RunID: "r-1", Limits: l, Deadline: deadline}, ident, "r-1", "/cache/rootfs/x", "/opt/aster-init",
		map[string]string{AnnotationManaged: "false", "aster.test": "x"})

	p := s.Process
	if p.User.UID != uint32(ident.Init) || p.User.GID != uint32(ident.Init) || !p.NoNewPrivileges || p.Terminal {
		t.Errorf("process %+v", p)
	}
	if c := p.Capabilities; c == nil || !slices.Equal(c.Bounding, InitCapabilities) || !slices.Equal(c.Effective, InitCapabilities) ||
		!slices.Equal(c.Permitted, InitCapabilities) || !slices.Equal(c.Inheritable, InitCapabilities) || !slices.Equal(c.Ambient, InitCapabilities) {
		t.Errorf("capabilities %+v, want exactly aster-init's %v", c, InitCapabilities)
	}
	if !slices.Equal(p.Args, []string{InitMountPath, ident.Flag(), "-linger=" + initLinger.String()}) {
		t.Errorf("args %v", p.Args)
	}
	rl := map[string]uint64{}
	for _, r := range p.Rlimits {
		rl[r.Type] = r.Hard
	}
	if rl["RLIMIT_NOFILE"] != 1024 || rl["RLIMIT_CORE"] != 0 || len(rl) != 2 {
		t.Errorf("rlimits %v", p.Rlimits)
	}
	if !s.Root.Readonly || s.Root.Path != "/cache/rootfs/x" {
		t.Errorf("root %+v", s.Root)
	}
	var ns []specs.LinuxNamespaceType
	for _, n := range s.Linux.Namespaces {
		if n.Path != "" {
			t.Errorf("namespace %s joins %s", n.Type, n.Path)
		}
		ns = append(ns, n.Type)
	}
	for _, want := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.NetworkNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.MountNamespace, specs.CgroupNamespace} {
		if !slices.Contains(ns, want) {
			t.Errorf("no new %s namespace", want)
		}
	}
	r := s.Linux.Resources
	if *r.Memory.Limit != l.MemoryBytes || *r.Memory.Swap != l.MemoryBytes {
		t.Errorf("memory %d swap %d", *r.Memory.Limit, *r.Memory.Swap)
	}
	if *r.CPU.Quota != 150_000 || *r.CPU.Period != 100_000 {
		t.Errorf("cpu %d/%d", *r.CPU.Quota, *r.CPU.Period)
	}
	if *r.Pids.Limit != 64 {
		t.Errorf("pids %d", *r.Pids.Limit)
	}
	if len(r.Devices) == 0 || r.Devices[0].Allow || r.Devices[0].Access != "rwm" {
		t.Errorf("devices must start by denying all: %+v", r.Devices)
	}
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction == specs.ActAllow {
		t.Fatalf("seccomp profile missing or allowing by default")
	}
	named := 0
	for _, call := range s.Linux.Seccomp.Syscalls {
		named += len(call.Names)
	}
	if named < 100 {
		t.Errorf("seccomp profile names only %d syscalls", named)
	}
	for _, call := range s.Linux.Seccomp.Syscalls {
		if call.Action == specs.ActAllow && (slices.Contains(call.Names, "unshare") || slices.Contains(call.Names, "mount") || slices.Contains(call.Names, "bpf")) {
			t.Errorf("seccomp allows %v without capabilities", call.Names)
		}
	}
	for _, m := range []string{"/proc/kcore", "/proc/keys", "/sys/firmware"} {
		if !slices.Contains(s.Linux.MaskedPaths, m) {
			t.Errorf("%s not masked", m)
		}
	}
	if !slices.Contains(s.Linux.ReadonlyPaths, "/proc/sysrq-trigger") {
		t.Error("/proc/sysrq-trigger not read-only")
	}
	if s.Linux.RootfsPropagation != "rprivate" {
		t.Errorf("propagation %q", s.Linux.RootfsPropagation)
	}
	mounts := map[string]specs.Mount{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = m
		if m.Type == "bind" && m.Destination != InitMountPath {
			t.Errorf("host bind mount %s → %s", m.Source, m.Destination)
		}
	}
	for dst, size := range map[string]int64{"/work": l.WorkdirBytes, "/tmp": l.TmpBytes} {
		o := strings.Join(mounts[dst].Options, ",")
		if mounts[dst].Type != "tmpfs" || !strings.Contains(o, "size="+itoa(size)) || !strings.Contains(o, "nr_inodes=") || !strings.Contains(o, "nosuid") {
			t.Errorf("%s: %+v", dst, mounts[dst])
		}
	}
	if m := mounts[InitMountPath]; m.Source != "/opt/aster-init" || !slices.Contains(m.Options, "ro") {
		t.Errorf("init mount %+v", m)
	}
	// No cgroup mount: the host reads the cgroup, and the job can write none.
	if m, ok := mounts["/sys/fs/cgroup"]; ok {
		t.Errorf("cgroup mounted into the sandbox: %+v", m)
	}
	if m := mounts["/sys"]; m.Type != "sysfs" || !slices.Contains(m.Options, "ro") {
		t.Errorf("sysfs mount %+v", m)
	}
	// The aster.* annotations cannot be overridden by extra ones.
	if s.Annotations[AnnotationManaged] != "true" || s.Annotations[AnnotationRun] != "r-1" || s.Annotations[AnnotationDeadline] != "1900000000" || s.Annotations["aster.test"] != "x" {
		t.Errorf("annotations %v", s.Annotations)
	}
	if s.Linux.CgroupsPath != "/aster/r-1" {
		t.Errorf("cgroups path %q", s.Linux.CgroupsPath)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

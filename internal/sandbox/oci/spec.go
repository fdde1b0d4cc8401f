package oci

import (
	"strconv"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/hardening"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// Annotations every Aster bundle carries, the OCI twin of the Docker runtime's
// labels. The run record in the state directory repeats them for the reaper.
const (
	AnnotationManaged  = "aster.managed"
	AnnotationRun      = "aster.run"
	AnnotationDeadline = "aster.deadline"
)

// InitMountPath is where aster-init is bind-mounted, read-only, in every sandbox.
const InitMountPath = "/.aster/init"

// InitCapabilities are the only capabilities a sandbox starts with: aster-init's,
// to start the job under its own uid (runtimekit.Identity). Init empties the
// bounding set before the job starts and drops all three right after; the job
// never holds any.
var InitCapabilities = []string{"CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"}

// initLinger is how long aster-init keeps a finished sandbox after its result,
// waiting for the host to close the stream: the host reads the sandbox's cgroup
// (its OOM verdict) meanwhile, and `run` removes the cgroup once init exits.
const initLinger = 10 * time.Second

// ociVersion is the spec version bundles declare. The fields used here are all
// in 1.0, and crun before 1.9 refuses any version without "1.0" in it.
const ociVersion = "1.0.2"

// shmBytes is the size of /dev/shm, as the Docker runtime sets it.
const shmBytes = 16 << 20

// specBase is the part of config.json that is the same for every sandbox: the
// process, namespaces, capabilities, seccomp, masked paths and the devices a
// job may use. It is built once per Runtime (the seccomp profile is large) and
// copied per run.
type specBase struct {
	seccomp  *specs.LinuxSeccomp
	masked   []string
	readonly []string
	apparmor string
}

func newSpecBase(apparmor string) (*specBase, error) {
	// The one Aster profile, the same bytes the Docker runtime sends.
	sc, err := hardening.SeccompOCI()
	if err != nil {
		return nil, err
	}
	return &specBase{seccomp: sc, masked: hardening.MaskedPaths(), readonly: hardening.ReadonlyPaths(), apparmor: apparmor}, nil
}

// bundleSpec builds the config.json of one sandbox. Nothing in it comes from the
// request except the sizes in opts.Limits (validated by the Manager) and the run
// id; every hardening setting is fixed.
func (b *specBase) bundleSpec(opts sandbox.PrepareOptions, ident runtimekit.Identity, id, rootfs, initPath string, extra map[string]string) *specs.Spec {
	l := opts.Limits
	annotations := map[string]string{}
	for k, v := range extra {
		annotations[k] = v
	}
	annotations[AnnotationManaged] = "true"
	annotations[AnnotationRun] = opts.RunID
	annotations[AnnotationDeadline] = strconv.FormatInt(opts.Deadline.Unix(), 10)

	tmpfs := func(size int64) []string {
		// exec: jobs run scripts from /work and build binaries in /tmp; nr_inodes
		// caps the number of files, which a size cap alone does not.
		return []string{"rw", "exec", "nosuid", "nodev",
			"size=" + strconv.FormatInt(size, 10),
			"nr_inodes=" + strconv.FormatInt(sandbox.TmpfsInodes(size), 10),
			"uid=" + strconv.Itoa(ident.Job), "gid=" + strconv.Itoa(ident.Job), "mode=0755"}
	}
	memory := l.MemoryBytes
	swap := memory // memory+swap equal to memory: no swap at all
	pids := l.Pids
	period := uint64(100_000)
	quota := l.MilliCPUs * int64(period) / 1000
	disableOOMKiller := false

	s := &specs.Spec{
		Version: ociVersion,
		Process: &specs.Process{
			Terminal: false,
			User:     specs.User{UID: uint32(ident.Init), GID: uint32(ident.Init)},
			Args:     []string{InitMountPath, ident.Flag(), "-linger=" + initLinger.String()},
			// init gives the job only what the caller passed; this is init's own.
			// One P while the Go runtime starts (fewer threads to start); init
			// then sets two itself, with the threads it needs (cmd/aster-init).
			Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "GOMAXPROCS=1"},
			Cwd: "/work",
			// Ambient (and so inheritable) too: init runs as a non-root uid, and
			// exec keeps nothing else for one. Init clears its inheritable and
			// ambient sets first thing, so nothing it starts inherits them.
			Capabilities: &specs.LinuxCapabilities{
				Bounding: InitCapabilities, Effective: InitCapabilities, Permitted: InitCapabilities,
				Inheritable: InitCapabilities, Ambient: InitCapabilities,
			},
			NoNewPrivileges: true,
			Rlimits: []specs.POSIXRlimit{
				{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024},
				{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
			},
			ApparmorProfile: b.apparmor,
		},
		Root:     &specs.Root{Path: rootfs, Readonly: true},
		Hostname: "sandbox",
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=" + strconv.Itoa(shmBytes)}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			// No cgroup mount: the host reads the sandbox's cgroup itself (the OOM
			// verdict must come from a source the job cannot touch), and crun on a
			// cgroup v1 host mounts a writable tmpfs there whatever the options say.
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/work", Type: "tmpfs", Source: "tmpfs", Options: tmpfs(l.WorkdirBytes)},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: tmpfs(l.TmpBytes)},
			{Destination: InitMountPath, Type: "bind", Source: initPath, Options: []string{"bind", "ro", "nosuid", "nodev", "rprivate"}},
		},
		Annotations: annotations,
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace},
				{Type: specs.NetworkNamespace}, // new and empty: only lo
				{Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace},
				{Type: specs.MountNamespace},
				{Type: specs.CgroupNamespace},
			},
			Resources: &specs.LinuxResources{
				Devices: deviceRules(),
				Memory: &specs.LinuxMemory{
					Limit:            &memory,
					Swap:             &swap,
					DisableOOMKiller: &disableOOMKiller,
				},
				CPU:  &specs.LinuxCPU{Quota: &quota, Period: &period},
				Pids: &specs.LinuxPids{Limit: &pids},
			},
			CgroupsPath:       "/aster/" + id,
			Seccomp:           b.seccomp,
			RootfsPropagation: "rprivate",
			MaskedPaths:       b.masked,
			ReadonlyPaths:     b.readonly,
		},
	}
	return s
}

// deviceRules denies every device but the handful a runtime creates in /dev.
func deviceRules() []specs.LinuxDeviceCgroup {
	dev := func(major, minor int64) specs.LinuxDeviceCgroup {
		d := specs.LinuxDeviceCgroup{Allow: true, Type: "c", Major: &major, Access: "rwm"}
		if minor >= 0 {
			d.Minor = &minor
		}
		return d
	}
	return []specs.LinuxDeviceCgroup{
		{Allow: false, Access: "rwm"},
		dev(1, 3),    // null
		dev(1, 5),    // zero
		dev(1, 7),    // full
		dev(1, 8),    // random
		dev(1, 9),    // urandom
		dev(5, 0),    // tty
		dev(5, 2),    // ptmx
		dev(136, -1), // pts/*
	}
}

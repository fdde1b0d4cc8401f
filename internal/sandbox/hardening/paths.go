package hardening

// MaskedPaths returns what every sandbox sees empty or not at all: a file is
// covered with /dev/null, a directory with an empty read-only tmpfs. The
// first part is the Docker engine's own default list (a runtime that is given
// a list replaces the engine's, so it must be repeated), the rest is host
// information a job has no use for: the kernel's build configuration, its
// BTF type information, crash-dump layout and build id (exact maps of the
// running kernel for an exploit), its symbol table (addresses are already
// zero without CAP_SYSLOG, the names still tell the build), the boot command
// line (on a VM it can name the hypervisor's control ports) and the x86 boot
// parameters (the firmware's memory map).
func MaskedPaths() []string {
	return []string{
		// Docker's defaults.
		"/proc/asound",
		"/proc/acpi",
		"/proc/interrupts",
		"/proc/kcore",
		"/proc/keys",
		"/proc/latency_stats",
		"/proc/timer_list",
		"/proc/timer_stats",
		"/proc/sched_debug",
		"/proc/scsi",
		"/sys/firmware",
		"/sys/devices/virtual/powercap",
		// Aster's additions (SECURITY.md M4).
		"/proc/config.gz",
		"/proc/kallsyms",
		"/proc/cmdline",
		"/sys/kernel/btf",
		"/sys/kernel/vmcoreinfo",
		"/sys/kernel/notes",
		"/sys/kernel/boot_params",
	}
}

// ReadonlyPaths returns what every sandbox sees read-only: the Docker
// engine's default list. /sys is mounted read-only as a whole anyway.
func ReadonlyPaths() []string {
	return []string{
		"/proc/bus",
		"/proc/fs",
		"/proc/irq",
		"/proc/sys",
		"/proc/sysrq-trigger",
	}
}

// TmpfsInodes is the inode cap of a sandbox tmpfs of the given size: one file per
// 2 KiB, at least 16384. A size cap alone lets a job create millions of empty files.
// It lives here, not in package sandbox, so that aster-init (which caps a microVM
// guest's tmpfs with it) does not link the orchestrator's packages: every package
// linked into aster-init is initialised again in each sandbox, twice per run.
func TmpfsInodes(sizeBytes int64) int64 { return max(sizeBytes/2048, 16384) }

package config

// Defaults of the microVM runtime (`--runtime microvm`).
const (
	DefaultMicroVMQEMU = "qemu-system-x86_64"
	// DefaultMicroVMKernelDir is where scripts/microvm-kernel.sh (make setup)
	// puts the guest kernel.
	DefaultMicroVMKernelDir = "/var/lib/aster/microvm/kernel"
	// DefaultMicroVMStateDir holds one directory and record per VM.
	DefaultMicroVMStateDir = "/run/aster/microvm"
	// FallbackMicroVMStateDir is used when /run is not a tmpfs.
	FallbackMicroVMStateDir = "/dev/shm/aster-microvm"
	// DefaultMicroVMCacheDir holds guest builds, image trees and disks.
	DefaultMicroVMCacheDir = "/var/lib/aster/microvm"
	// DefaultMicroVMAccel: KVM when it boots the guest, else TCG.
	DefaultMicroVMAccel = "auto"
)

// MicroVMConfig is the `microvm:` section of aster.yaml.
type MicroVMConfig struct {
	QEMU      string `yaml:"qemu"`
	KernelDir string `yaml:"kernel_dir"`
	StateDir  string `yaml:"state_dir"`
	CacheDir  string `yaml:"cache_dir"`
	// Accel is auto, kvm or tcg.
	Accel string `yaml:"accel"`
}

// DefaultMicroVM returns the microvm section with every default filled in.
func DefaultMicroVM() MicroVMConfig {
	state := stateDir(DefaultMicroVMStateDir, FallbackMicroVMStateDir)
	return MicroVMConfig{QEMU: DefaultMicroVMQEMU, KernelDir: DefaultMicroVMKernelDir, StateDir: state, CacheDir: DefaultMicroVMCacheDir, Accel: DefaultMicroVMAccel}
}

// envVars binds the ASTER_* variables of the `microvm:` section to the fields of m.
func (m *MicroVMConfig) envVars() []envVar {
	return []envVar{
		str("ASTER_MICROVM_QEMU", &m.QEMU, "qemu-system-x86_64 binary for --runtime microvm"),
		str("ASTER_MICROVM_KERNEL_DIR", &m.KernelDir, "guest kernel directory of the microvm runtime (scripts/microvm-kernel.sh)"),
		str("ASTER_MICROVM_STATE_DIR", &m.StateDir, "per-VM directories and records of the microvm runtime"),
		str("ASTER_MICROVM_CACHE_DIR", &m.CacheDir, "guest builds, image trees and disks of the microvm runtime"),
		str("ASTER_MICROVM_ACCEL", &m.Accel, "microvm accelerator: auto, kvm or tcg"),
	}
}

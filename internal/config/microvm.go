package config

import "github.com/asterhq/aster/internal/sandbox/microvm"

// Defaults of the microVM runtime (`--runtime microvm`): the microvm package's own.
const (
	DefaultMicroVMQEMU      = microvm.DefaultQEMU
	DefaultMicroVMKernelDir = microvm.DefaultKernelDir
	DefaultMicroVMStateDir  = microvm.DefaultStateDir // FallbackMicroVMStateDir when /run is not a tmpfs
	FallbackMicroVMStateDir = microvm.FallbackStateDir
	DefaultMicroVMCacheDir  = microvm.DefaultCacheDir
	DefaultMicroVMAccel     = microvm.DefaultAccel
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

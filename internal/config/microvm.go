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
	state := DefaultMicroVMStateDir
	if !isTmpfs("/run") && isTmpfs("/dev/shm") {
		state = FallbackMicroVMStateDir
	}
	return MicroVMConfig{QEMU: DefaultMicroVMQEMU, KernelDir: DefaultMicroVMKernelDir, StateDir: state, CacheDir: DefaultMicroVMCacheDir, Accel: DefaultMicroVMAccel}
}

func mergeMicroVM(dst *MicroVMConfig, src MicroVMConfig) {
	set := setNonEmpty
	set(&dst.QEMU, src.QEMU)
	set(&dst.KernelDir, src.KernelDir)
	set(&dst.StateDir, src.StateDir)
	set(&dst.CacheDir, src.CacheDir)
	set(&dst.Accel, src.Accel)
}

// MicroVMEnvVars lists the variables applyMicroVMEnv reads.
var MicroVMEnvVars = map[string]string{
	"ASTER_MICROVM_QEMU":       "qemu-system-x86_64 binary for --runtime microvm",
	"ASTER_MICROVM_KERNEL_DIR": "guest kernel directory of the microvm runtime (scripts/microvm-kernel.sh)",
	"ASTER_MICROVM_STATE_DIR":  "per-VM directories and records of the microvm runtime",
	"ASTER_MICROVM_CACHE_DIR":  "guest builds, image trees and disks of the microvm runtime",
	"ASTER_MICROVM_ACCEL":      "microvm accelerator: auto, kvm or tcg",
}

func applyMicroVMEnv(m *MicroVMConfig, getenv func(string) string) {
	set := envSetter(getenv)
	set(&m.QEMU, "ASTER_MICROVM_QEMU")
	set(&m.KernelDir, "ASTER_MICROVM_KERNEL_DIR")
	set(&m.StateDir, "ASTER_MICROVM_STATE_DIR")
	set(&m.CacheDir, "ASTER_MICROVM_CACHE_DIR")
	set(&m.Accel, "ASTER_MICROVM_ACCEL")
}

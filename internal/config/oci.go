package config

import (
	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/sandbox/oci"
)

// Defaults of the direct OCI runtime (`--runtime oci`): the oci package's own.
const (
	DefaultOCIRuntime   = oci.DefaultRuntime
	DefaultOCIStateDir  = oci.DefaultStateDir // on a tmpfs; FallbackOCIStateDir when /run is not one
	FallbackOCIStateDir = oci.FallbackStateDir
	DefaultOCICacheDir  = oci.DefaultCacheDir
)

// OCIConfig is the `oci:` section of aster.yaml.
type OCIConfig struct {
	// Runtime is the OCI runtime binary: crun (default), runc or runsc, or a path.
	Runtime  string `yaml:"runtime"`
	StateDir string `yaml:"state_dir"`
	CacheDir string `yaml:"cache_dir"`
}

// DefaultOCI returns the oci section with every default filled in.
func DefaultOCI() OCIConfig {
	state := stateDir(DefaultOCIStateDir, FallbackOCIStateDir)
	return OCIConfig{Runtime: DefaultOCIRuntime, StateDir: state, CacheDir: DefaultOCICacheDir}
}

// stateDir is a runtime's state directory: dir, on /run, or fallback, on
// /dev/shm, when /run is not a tmpfs and /dev/shm is.
func stateDir(dir, fallback string) string {
	if !isTmpfs("/run") && isTmpfs("/dev/shm") {
		return fallback
	}
	return dir
}

func isTmpfs(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// envVars binds the ASTER_* variables of the `oci:` section to the fields of o.
func (o *OCIConfig) envVars() []envVar {
	return []envVar{
		str("ASTER_OCI_RUNTIME", &o.Runtime, "OCI runtime binary for --runtime oci: crun, runc or runsc"),
		str("ASTER_OCI_STATE_DIR", &o.StateDir, "per-sandbox bundles and run records of the oci runtime"),
		str("ASTER_OCI_CACHE_DIR", &o.CacheDir, "exported image root filesystems of the oci runtime"),
	}
}

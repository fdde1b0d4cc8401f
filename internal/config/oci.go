package config

import "strings"

// Defaults of the direct OCI runtime (`--runtime oci`).
const (
	DefaultOCIRuntime = "crun"
	// DefaultOCIStateDir holds one bundle and run record per sandbox.
	DefaultOCIStateDir = "/run/aster/oci"
	// DefaultOCICacheDir holds exported image root filesystems, one per digest.
	DefaultOCICacheDir = "/var/lib/aster/oci"
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
	return OCIConfig{Runtime: DefaultOCIRuntime, StateDir: DefaultOCIStateDir, CacheDir: DefaultOCICacheDir}
}

func mergeOCI(dst *OCIConfig, src OCIConfig) {
	set := func(d *string, s string) {
		if s != "" {
			*d = s
		}
	}
	set(&dst.Runtime, src.Runtime)
	set(&dst.StateDir, src.StateDir)
	set(&dst.CacheDir, src.CacheDir)
}

func applyOCIEnv(o *OCIConfig, getenv func(string) string) {
	set := func(d *string, key string) {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			*d = v
		}
	}
	set(&o.Runtime, "ASTER_OCI_RUNTIME")
	set(&o.StateDir, "ASTER_OCI_STATE_DIR")
	set(&o.CacheDir, "ASTER_OCI_CACHE_DIR")
}

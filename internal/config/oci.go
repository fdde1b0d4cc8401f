package config

import (
	"fmt"
	"strings"
)

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

// OCIEnvVars lists the variables OCISection reads.
var OCIEnvVars = map[string]string{
	"ASTER_OCI_RUNTIME":   "OCI runtime binary for --runtime oci: crun, runc or runsc",
	"ASTER_OCI_STATE_DIR": "per-sandbox bundles and run records of the oci runtime",
	"ASTER_OCI_CACHE_DIR": "exported image root filesystems of the oci runtime",
}

// OCISection decodes the `oci:` section of c (absent: all defaults) and
// applies the ASTER_OCI_* variables over it.
func (c Config) OCISection(getenv func(string) string) (OCIConfig, error) {
	var o OCIConfig
	if node, ok := c.Extra["oci"]; ok {
		if err := node.Decode(&o); err != nil {
			return o, fmt.Errorf("config oci section: %w", err)
		}
	}
	set := func(d *string, key, def string) {
		if v := strings.TrimSpace(getenv(key)); v != "" {
			*d = v
		}
		if strings.TrimSpace(*d) == "" {
			*d = def
		}
	}
	set(&o.Runtime, "ASTER_OCI_RUNTIME", DefaultOCIRuntime)
	set(&o.StateDir, "ASTER_OCI_STATE_DIR", DefaultOCIStateDir)
	set(&o.CacheDir, "ASTER_OCI_CACHE_DIR", DefaultOCICacheDir)
	return o, nil
}

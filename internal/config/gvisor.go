package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/sandbox/oci"
)

// Defaults of the gVisor runtime (`--runtime gvisor`: the oci runtime driving
// gVisor's runsc): the oci package's own.
const (
	DefaultGVisorRunsc    = oci.DefaultGVisorRunsc
	DefaultGVisorPlatform = oci.DefaultGVisorPlatform
)

// GVisorPlatforms are the platforms gvisor.platform accepts.
var GVisorPlatforms = []string{oci.PlatformSystrap, oci.PlatformPtrace, oci.PlatformKVM}

// GVisorConfig is the `gvisor:` section of aster.yaml.
type GVisorConfig struct {
	// Runsc is the runsc binary: a name looked up in PATH or a path.
	Runsc string `yaml:"runsc"`
	// Platform is systrap, ptrace or kvm; empty picks one (above). It also
	// applies to `--runtime oci --oci-runtime runsc`.
	Platform string `yaml:"platform"`
}

// DefaultGVisor returns the gvisor section with every default filled in.
func DefaultGVisor() GVisorConfig {
	return GVisorConfig{Runsc: DefaultGVisorRunsc, Platform: DefaultGVisorPlatform}
}

// envVars binds the ASTER_* variables of the `gvisor:` section to the fields of g.
func (g *GVisorConfig) envVars() []envVar {
	return []envVar{
		str("ASTER_GVISOR_RUNSC", &g.Runsc, "runsc binary for --runtime gvisor (default runsc from PATH)"),
		str("ASTER_GVISOR_PLATFORM", &g.Platform, "gVisor platform: systrap, ptrace or kvm (default: systrap where runsc has it, else ptrace)"),
	}
}

// Validate checks the platform name (whether the binary offers it is checked
// when the runtime starts).
func (g GVisorConfig) Validate() error {
	if g.Platform != "" && !slices.Contains(GVisorPlatforms, g.Platform) {
		return fmt.Errorf("gvisor.platform %q is not one of %s", g.Platform, strings.Join(GVisorPlatforms, ", "))
	}
	return nil
}

package cli

import (
	"log/slog"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci"
)

// newOCIRuntime builds the direct OCI runtime: images come from the Docker
// engine (exported once per digest into the cache), sandboxes run without it.
func newOCIRuntime(c config.Config, log *slog.Logger) (sandbox.Runtime, func(), error) {
	return openOCI(c, log, false)
}

// newGVisorRuntime is the oci runtime on gVisor's runsc: the same bundles and
// hardening, with every sandbox on gVisor's own kernel (the sentry) instead
// of the host's. The oci package adds the flags runsc needs.
func newGVisorRuntime(c config.Config, log *slog.Logger) (sandbox.Runtime, func(), error) {
	return openOCI(c, log, true)
}

func openOCI(c config.Config, log *slog.Logger, gvisor bool) (sandbox.Runtime, func(), error) {
	initPath, src, err := daemonlessInputs(c)
	if err != nil {
		return nil, nil, err
	}
	bin, platform := c.OCI.Runtime, ""
	if gvisor {
		bin = c.GVisor.Runsc
	}
	if gvisor || oci.IsRunsc(bin) {
		platform = c.GVisor.Platform
	}
	rt, err := oci.New(oci.Options{
		Runtime:        bin,
		GVisor:         gvisor,
		GVisorPlatform: platform,
		StateDir:       c.OCI.StateDir,
		CacheDir:       c.OCI.CacheDir,
		InitPath:       initPath,
		Images:         src,
		Annotations:    c.Labels,
		Logger:         log,
	})
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	return rt, func() { _ = rt.Close(); _ = src.Close() }, nil
}

// daemonlessInputs are what the runtimes without a daemon (oci, gvisor,
// microvm) start from: the aster-init binary, and the Docker engine as the
// source of images (exported once per digest into their cache).
func daemonlessInputs(c config.Config) (initPath string, src *oci.DockerSource, err error) {
	if initPath, err = c.ResolveInitPath(); err != nil {
		return "", nil, err
	}
	if src, err = oci.NewDockerSource(c.DockerHost); err != nil {
		return "", nil, err
	}
	return initPath, src, nil
}

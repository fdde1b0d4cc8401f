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
	initPath, err := c.ResolveInitPath()
	if err != nil {
		return nil, nil, err
	}
	src, err := oci.NewDockerSource(c.DockerHost)
	if err != nil {
		return nil, nil, err
	}
	rt, err := oci.New(oci.Options{
		Runtime:     c.OCI.Runtime,
		StateDir:    c.OCI.StateDir,
		CacheDir:    c.OCI.CacheDir,
		InitPath:    initPath,
		Images:      src,
		Annotations: c.Labels,
		Logger:      log,
	})
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	return rt, func() { _ = rt.Close(); _ = src.Close() }, nil
}

package cli

import (
	"log/slog"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/docker"
)

// runtimeFactories builds a runtime by name. Other runtimes register here.
var runtimeFactories = map[string]func(c config.Config, log *slog.Logger) (sandbox.Runtime, func(), error){
	"docker":     newDockerRuntime,
	"oci":        newOCIRuntime,
	"gvisor":     newGVisorRuntime,
	"kubernetes": newKubernetesRuntime,
}

func newDockerRuntime(c config.Config, log *slog.Logger) (sandbox.Runtime, func(), error) {
	initPath, err := c.ResolveInitPath()
	if err != nil {
		return nil, nil, err
	}
	rt, err := docker.New(docker.Options{Host: c.DockerHost, InitPath: initPath, EngineRuntime: c.EngineRuntime, Labels: c.Labels, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return rt, func() { _ = rt.Close() }, nil
}

// openRuntime builds the configured runtime.
func openRuntime(c config.Config, log *slog.Logger) (sandbox.Runtime, func(), error) {
	f, ok := runtimeFactories[c.Runtime]
	if !ok {
		names := make([]string, 0, len(runtimeFactories))
		for n := range runtimeFactories {
			names = append(names, n)
		}
		return nil, nil, usageErr("unknown runtime %q (have %v)", c.Runtime, names)
	}
	return f(c, log)
}

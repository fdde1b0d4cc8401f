package cli

import (
	"errors"
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
	"microvm":    newMicroVMRuntime,
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

// startRuntime is openRuntime for a command: a failure that is not already an
// exitError (a usage error) exits with code.
func startRuntime(c config.Config, log *slog.Logger, code int) (sandbox.Runtime, func(), error) {
	rt, closeRT, err := openRuntime(c, log)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return nil, nil, err
		}
		return nil, nil, &exitError{code: code, err: err}
	}
	return rt, closeRT, nil
}

// newManager builds a command's sandbox Manager on rt. What every command takes
// from its configuration is set here: c's images (unless o names its own), the
// bounds of config.LimitBounds and c's reaper allowance (so the deadline labels
// agree with the reaper). o gives the rest: defaults, concurrency, pool,
// observer, logger. A bad allowance is a usage error; a refused Manager exits
// with code.
func newManager(c config.Config, rt sandbox.Runtime, o sandbox.ManagerOptions, code int) (*sandbox.Manager, error) {
	allowance, err := c.ReaperAllowance()
	if err != nil {
		return nil, usageErr("%v", err)
	}
	o.Runtime = rt
	if len(o.Images) == 0 {
		o.Images = c.Images
	}
	o.Bounds = config.LimitBounds()
	o.PrepareAllowance = allowance
	mgr, err := sandbox.NewManager(o)
	if err != nil {
		return nil, &exitError{code: code, err: err}
	}
	return mgr, nil
}

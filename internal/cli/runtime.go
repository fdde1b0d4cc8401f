package cli

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/compose"
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
		return nil, nil, usageErr("unknown runtime %q (have %s)", c.Runtime, strings.Join(slices.Sorted(maps.Keys(runtimeFactories)), ", "))
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

// newManager is compose.NewManager for a command: a bad configuration is a
// usage error; a refused Manager exits with code.
func newManager(c config.Config, rt sandbox.Runtime, o sandbox.ManagerOptions, code int) (*sandbox.Manager, error) {
	mgr, err := compose.NewManager(c, rt, o)
	if err != nil {
		var ce *compose.ConfigError
		if errors.As(err, &ce) {
			return nil, usageErr("%v", ce.Err)
		}
		return nil, &exitError{code: code, err: err}
	}
	return mgr, nil
}

// closeManager closes a long-running command's Manager when it stops: the
// warm pool is destroyed and sandboxes still being destroyed are waited for,
// a minute at most (ctx may be cancelled already).
func closeManager(ctx context.Context, mgr *sandbox.Manager, log *slog.Logger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := mgr.Close(cctx); err != nil {
		log.Warn("closing the sandbox manager", "err", err)
	}
}

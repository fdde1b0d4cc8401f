// Package compose builds the sandbox Manager of every command and of the
// benchmark harness from the configuration, so that what a Manager takes from
// aster.yaml (images, limit bounds, the reaper's allowance) is set in one
// place.
package compose

import (
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
)

// ConfigError is a configuration value NewManager could not use (a command's
// usage error); Err is the parse error.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// NewManager builds a sandbox Manager on rt. From c it takes the images
// (unless o names its own), the bounds of config.LimitBounds, the reaper
// allowance (so the deadline labels agree with the reaper) and the host task
// budget (unless o sets one); o gives the rest:
// defaults, concurrency, pool, observer, logger. A bad allowance or budget
// is a *ConfigError; a refused Manager is the Manager's error.
func NewManager(c config.Config, rt sandbox.Runtime, o sandbox.ManagerOptions) (*sandbox.Manager, error) {
	allowance, err := c.ReaperAllowance()
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	if o.HostTasks == 0 {
		if o.HostTasks, err = c.HostTaskBudget(); err != nil {
			return nil, &ConfigError{Err: err}
		}
	}
	o.Runtime = rt
	if len(o.Images) == 0 {
		o.Images = c.Images
	}
	o.Bounds = config.LimitBounds()
	o.PrepareAllowance = allowance
	return sandbox.NewManager(o)
}

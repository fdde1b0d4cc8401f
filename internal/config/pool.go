package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// Defaults of the warm pool (`aster sandbox serve --warm N`); the pool's own
// are the sandbox package's.
const (
	DefaultWarm            = 0 // no pool unless asked for
	DefaultPoolMaxIdle     = sandbox.DefaultPoolMaxIdle
	DefaultPoolShrinkAfter = sandbox.DefaultPoolShrinkAfter
	DefaultPoolRefillRate  = sandbox.DefaultPoolRefillRate // sandboxes per second per pool, at most
	MaxWarm                = 256
)

// PoolConfig is the `pool:` section of aster.yaml.
type PoolConfig struct {
	// Warm is how many sandboxes are kept ready per image (0: no pool).
	Warm        string `yaml:"warm"`
	MaxIdle     string `yaml:"max_idle"`
	ShrinkAfter string `yaml:"shrink_after"`
	// RefillPerSecond bounds how fast a pool is refilled.
	RefillPerSecond string `yaml:"refill_per_second"`
}

// envVars binds the ASTER_* variables of the `pool:` section to the fields of p.
func (p *PoolConfig) envVars() []envVar {
	return []envVar{
		str("ASTER_WARM", &p.Warm, "sandboxes kept ready per image by `aster sandbox serve` (0: no pool)"),
	}
}

// PoolSection decodes the `pool:` section of c (absent: defaults) and applies
// ASTER_WARM over it.
func (c Config) PoolSection(getenv func(string) string) (PoolConfig, error) {
	var p PoolConfig
	err := c.loadSection("pool", &p, getenv)
	return p, err
}

// Parse validates p into the Manager's pool options (BackgroundClose is the
// caller's choice).
func (p PoolConfig) Parse() (sandbox.PoolOptions, error) {
	out := sandbox.PoolOptions{Warm: DefaultWarm, MaxIdle: DefaultPoolMaxIdle, ShrinkAfter: DefaultPoolShrinkAfter, RefillPerSecond: DefaultPoolRefillRate}
	var errs []error
	if v := strings.TrimSpace(p.Warm); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxWarm {
			errs = append(errs, fmt.Errorf("warm %q: want a whole number from 0 to %d", v, MaxWarm))
		} else {
			out.Warm = n
		}
	}
	dur := func(name, v string, dst *time.Duration) {
		if strings.TrimSpace(v) == "" {
			return
		}
		d, err := units.ParseDuration(v)
		if err != nil || d < time.Second {
			errs = append(errs, fmt.Errorf("pool %s %q: want a duration of at least 1s", name, v))
			return
		}
		*dst = d
	}
	dur("max_idle", p.MaxIdle, &out.MaxIdle)
	dur("shrink_after", p.ShrinkAfter, &out.ShrinkAfter)
	if v := strings.TrimSpace(p.RefillPerSecond); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 10_000 {
			errs = append(errs, fmt.Errorf("pool refill_per_second %q: want a number above 0", v))
		} else {
			out.RefillPerSecond = f
		}
	}
	return out, errors.Join(errs...)
}

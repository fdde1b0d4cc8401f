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

// SessionsConfig is the `serve.sessions:` section: the operator's defaults
// and ceilings for sessions (docs/sessions.md). Empty fields take defaults.
type SessionsConfig struct {
	// TTL and IdleTimeout are a session's defaults; MaxTTL and
	// MaxIdleTimeout the most a request may ask for.
	TTL            string `yaml:"ttl"`
	MaxTTL         string `yaml:"max_ttl"`
	IdleTimeout    string `yaml:"idle_timeout"`
	MaxIdleTimeout string `yaml:"max_idle_timeout"`
	// MaxExecs bounds the commands running at once in one session.
	MaxExecs string `yaml:"max_execs"`
	// Max bounds the sessions alive at once on the server (default half of
	// max_concurrent, so that one-shot runs always keep slots); MaxPerToken
	// those of one token.
	Max         string `yaml:"max"`
	MaxPerToken string `yaml:"max_per_token"`
	// SnapshotDir holds the snapshots (emptied at start; default a new
	// temporary directory) and MaxSnapshots bounds them all together.
	SnapshotDir  string `yaml:"snapshot_dir"`
	MaxSnapshots string `yaml:"max_snapshots"`
}

// SessionSettings are the parsed values of a SessionsConfig; a zero field
// takes the default of the package that uses it (sandbox, sandboxapi).
type SessionSettings struct {
	Options          sandbox.SessionOptions
	Max, PerToken    int
	SnapshotDir      string
	MaxSnapshotBytes int64
}

// Parse validates s; maxConcurrent sizes the default Max.
func (s SessionsConfig) Parse(maxConcurrent int) (SessionSettings, error) {
	out := SessionSettings{SnapshotDir: strings.TrimSpace(s.SnapshotDir), Max: max(1, maxConcurrent/2)}
	var errs []error
	dur := func(name, v string, dst *time.Duration) {
		if v = strings.TrimSpace(v); v == "" {
			return
		}
		d, err := units.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("sessions.%s %q: want a positive duration such as 30m", name, v))
			return
		}
		*dst = d
	}
	count := func(name, v string, dst *int) {
		if v = strings.TrimSpace(v); v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("sessions.%s %q: want a whole number of at least 1", name, v))
			return
		}
		*dst = n
	}
	o := &out.Options
	dur("ttl", s.TTL, &o.DefaultTTL)
	dur("max_ttl", s.MaxTTL, &o.MaxTTL)
	dur("idle_timeout", s.IdleTimeout, &o.DefaultIdle)
	dur("max_idle_timeout", s.MaxIdleTimeout, &o.MaxIdle)
	count("max_execs", s.MaxExecs, &o.MaxExecs)
	count("max", s.Max, &out.Max)
	count("max_per_token", s.MaxPerToken, &out.PerToken)
	if v := strings.TrimSpace(s.MaxSnapshots); v != "" {
		n, err := units.ParseBytes(v)
		if err != nil || n < 1<<20 {
			errs = append(errs, fmt.Errorf("sessions.max_snapshots %q: want a size of at least 1MiB, e.g. 2g", v))
		} else {
			out.MaxSnapshotBytes = n
		}
	}
	if o.MaxTTL > 0 && o.DefaultTTL > o.MaxTTL {
		errs = append(errs, fmt.Errorf("sessions.ttl %s is above sessions.max_ttl %s", o.DefaultTTL, o.MaxTTL))
	}
	if o.MaxIdle > 0 && o.DefaultIdle > o.MaxIdle {
		errs = append(errs, fmt.Errorf("sessions.idle_timeout %s is above sessions.max_idle_timeout %s", o.DefaultIdle, o.MaxIdle))
	}
	return out, errors.Join(errs...)
}

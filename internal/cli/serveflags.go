package cli

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
)

// serveSectionFlags are the flags of the serve: section that `aster sandbox
// serve` and `aster mcp` share: the token file, admission, the body caps and
// the ceilings. Each command defines them with its own help; apply is common.
type serveSectionFlags struct {
	tokenFile, maxConcurrent, queue, queueTimeout, maxBody, maxBodyInFlight string
	ceilings                                                                ceilingFlags
}

// apply copies the flags given over sc.
func (f *serveSectionFlags) apply(fl *pflag.FlagSet, sc *config.ServeConfig) {
	str := changedSetter(fl)
	str("token-file", &sc.TokenFile, f.tokenFile)
	str("max-concurrent", &sc.MaxConcurrent, f.maxConcurrent)
	str("queue", &sc.Queue, f.queue)
	str("queue-timeout", &sc.QueueTimeout, f.queueTimeout)
	str("max-body", &sc.MaxBody, f.maxBody)
	str("max-body-in-flight", &sc.MaxBodyInFlight, f.maxBodyInFlight)
	f.ceilings.apply(fl, &sc.Ceilings)
}

// limitFlags are the flags of the limits, one per sandbox.LimitFields name
// (--timeout, --output-limit, ...), as given: aster exec's, and with the
// prefix max- the ceilings. A CPU count is a number flag, a plain count a
// whole-number one, the rest text.
type limitFlags config.LimitsConfig

// limitFlagName is the flag of limit f with prefix before its name.
func limitFlagName(prefix string, f sandbox.LimitField) string {
	return prefix + strings.TrimPrefix(f.Flag(), "--")
}

// register defines the flags, named with prefix, def their defaults; help
// gives each one's usage from the limit's aster.yaml name ("timeout").
func (f *limitFlags) register(fl *pflag.FlagSet, prefix string, def config.LimitsConfig, help func(limit string) string) {
	for _, lf := range sandbox.LimitFields() {
		name, p, d := limitFlagName(prefix, lf), (*config.LimitsConfig)(f).Field(lf.Name), *def.Field(lf.Name)
		switch lf.Unit {
		case sandbox.UnitCount:
			intStringVar(fl, p, name, d, help(lf.Name))
		case sandbox.UnitCPUs:
			floatStringVar(fl, p, name, d, help(lf.Name))
		default:
			fl.StringVar(p, name, d, help(lf.Name))
		}
	}
}

// ceilingFlags are the --max-* flags: the largest limits a request may ask
// for (serve.ceilings in aster.yaml).
type ceilingFlags struct{ limitFlags }

// ceilingPrefix starts the name of every ceiling flag: --max-timeout.
const ceilingPrefix = "max-"

// register defines the flags, config.DefaultCeilings their defaults; help
// gives each one's usage from the limit's aster.yaml name ("timeout").
func (f *ceilingFlags) register(fl *pflag.FlagSet, help func(limit string) string) {
	f.limitFlags.register(fl, ceilingPrefix, config.DefaultCeilings(), help)
}

// apply copies the flags given over dst.
func (f *ceilingFlags) apply(fl *pflag.FlagSet, dst *config.LimitsConfig) {
	str := changedSetter(fl)
	given := (*config.LimitsConfig)(&f.limitFlags)
	for _, lf := range sandbox.LimitFields() {
		str(limitFlagName(ceilingPrefix, lf), dst.Field(lf.Name), *given.Field(lf.Name))
	}
}

// serveSettings parses c's default limits and the serve: section sc (flags
// applied) into a server's settings; its errors are usage errors.
func serveSettings(c config.Config, sc config.ServeConfig) (sandbox.Limits, config.ServeSettings, error) {
	defaults, err := c.Limits.Parse()
	if err != nil {
		return defaults, config.ServeSettings{}, usageErr("limits: %v", trimInvalid(err))
	}
	set, err := sc.Parse(defaults.MemoryBytes, config.HostMemoryBytes)
	if err != nil {
		return defaults, set, usageErr("%v", err)
	}
	return defaults, set, nil
}

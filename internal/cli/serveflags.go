package cli

import (
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

// ceilingFlags are the --max-* flags: the largest limits a request may ask
// for (serve.ceilings in aster.yaml).
type ceilingFlags config.LimitsConfig

// ceilingFlagList lists the --max-* flags: each one's name, the limit's
// aster.yaml name, its field, and whether it is a number.
var ceilingFlagList = []struct {
	flag, limit string
	field       func(*config.LimitsConfig) *string
	kind        byte // 's' text, 'i' whole number, 'f' number
}{
	{"max-timeout", "timeout", func(l *config.LimitsConfig) *string { return &l.Timeout }, 's'},
	{"max-memory", "memory", func(l *config.LimitsConfig) *string { return &l.Memory }, 's'},
	{"max-cpus", "cpus", func(l *config.LimitsConfig) *string { return &l.CPUs }, 'f'},
	{"max-pids", "pids", func(l *config.LimitsConfig) *string { return &l.Pids }, 'i'},
	{"max-output-limit", "output_limit", func(l *config.LimitsConfig) *string { return &l.OutputLimit }, 's'},
	{"max-output-ceiling", "output_ceiling", func(l *config.LimitsConfig) *string { return &l.OutputCeiling }, 's'},
	{"max-workdir-size", "workdir_size", func(l *config.LimitsConfig) *string { return &l.WorkdirSize }, 's'},
	{"max-tmp-size", "tmp_size", func(l *config.LimitsConfig) *string { return &l.TmpSize }, 's'},
}

// register defines the flags, config.DefaultCeilings their defaults; help
// gives each one's usage from the limit's aster.yaml name ("timeout").
func (f *ceilingFlags) register(fl *pflag.FlagSet, help func(limit string) string) {
	def := config.DefaultCeilings()
	for _, c := range ceilingFlagList {
		p, d := c.field((*config.LimitsConfig)(f)), *c.field(&def)
		switch c.kind {
		case 'i':
			intStringVar(fl, p, c.flag, d, help(c.limit))
		case 'f':
			floatStringVar(fl, p, c.flag, d, help(c.limit))
		default:
			fl.StringVar(p, c.flag, d, help(c.limit))
		}
	}
}

// apply copies the flags given over dst.
func (f *ceilingFlags) apply(fl *pflag.FlagSet, dst *config.LimitsConfig) {
	str := changedSetter(fl)
	for _, c := range ceilingFlagList {
		str(c.flag, c.field(dst), *c.field((*config.LimitsConfig)(f)))
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

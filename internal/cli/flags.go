package cli

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/egress"
)

// numStringValue is a flag holding a number as text, so that "not given"
// (empty) still lets the configuration decide, while help shows its type
// (int or float) and a non-number is refused while the flags are parsed.
type numStringValue struct {
	p     *string
	float bool
}

// intString returns a whole-number flag value backed by p (its current value
// is the default).
func intString(p *string) *numStringValue { return &numStringValue{p: p} }

// floatString returns a number flag value backed by p, such as a CPU count.
func floatString(p *string) *numStringValue { return &numStringValue{p: p, float: true} }

// intStringVar defines a whole-number flag stored as text, with default def.
func intStringVar(fl *pflag.FlagSet, p *string, name, def, usage string) {
	*p = def
	fl.Var(intString(p), name, usage)
}

// floatStringVar defines a number flag stored as text, with default def.
func floatStringVar(fl *pflag.FlagSet, p *string, name, def, usage string) {
	*p = def
	fl.Var(floatString(p), name, usage)
}

func (v *numStringValue) String() string { return *v.p }

func (v *numStringValue) Set(s string) error {
	t := strings.TrimSpace(s)
	if v.float {
		if _, err := strconv.ParseFloat(t, 64); err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
	} else if _, err := strconv.ParseInt(t, 10, 64); err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	*v.p = t
	return nil
}

func (v *numStringValue) Type() string {
	if v.float {
		return "float"
	}
	return "int"
}

// parallelVar defines --parallel, the analyzers one review runs at once.
func parallelVar(fl *pflag.FlagSet, p *int, usage string) {
	fl.IntVar(p, "parallel", config.DefaultAnalyzerParallel, usage+"; the default is this host's CPUs, 2 to 4 (each analyzer's sandbox has one CPU)")
}

// checkParallel refuses a --parallel outside 1 to config.MaxAnalyzerParallel.
func checkParallel(n int) error {
	if n < 1 || n > config.MaxAnalyzerParallel {
		return usageErr("--parallel %d: want 1 to %d", n, config.MaxAnalyzerParallel)
	}
	return nil
}

// egressAllowVar defines the repeatable --egress-allow HOST[:PORT] flag of
// the commands that run install phases; its entries add to aster.yaml's
// egress.allow (config.EgressPolicy checks them).
func egressAllowVar(fl *pflag.FlagSet, p *[]string) {
	fl.StringArrayVar(p, "egress-allow", nil, "a host the install phase of a test run may reach through the egress relay, as HOST[:PORT] (port 443 by default; repeatable; adds to aster.yaml egress.allow). Default: none")
}

// egressPolicy resolves the relay policy of a command and logs what it allows.
func egressPolicy(c config.Config, extra []string, log *slog.Logger) (*egress.Policy, error) {
	p, err := c.EgressPolicy(extra, log)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if p.Enabled() {
		hosts := make([]string, len(p.Allow))
		for i, r := range p.Allow {
			hosts[i] = r.String()
		}
		log.Info("egress relay allows", "hosts", strings.Join(hosts, ","), "max_bytes", p.MaxBytes, "max_connections", p.MaxConns)
	}
	return p, nil
}

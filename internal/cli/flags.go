package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
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

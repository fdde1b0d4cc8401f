package config

import "strings"

// envVar is one ASTER_* variable of a section: its name, its line in --help
// and what a non-blank value does. Each section lists its variables once, as
// a table bound to the section's fields, so the name that is applied and the
// name that is described and accepted by CheckEnv cannot drift apart.
type envVar struct {
	name string
	help string
	set  func(v string) error
}

// str is a variable whose trimmed value replaces a string field.
func str(name string, field *string, help string) envVar {
	return envVar{name: name, help: help, set: func(v string) error { *field = v; return nil }}
}

// parsed is a variable whose trimmed value set turns into a field.
func parsed(name string, set func(v string) error, help string) envVar {
	return envVar{name: name, help: help, set: set}
}

// applyEnvVars applies each variable of vars that getenv gives a non-blank
// value, in order; the first value that does not parse is the error.
func applyEnvVars(getenv func(string) string, vars []envVar) error {
	for _, e := range vars {
		v := strings.TrimSpace(getenv(e.name))
		if v == "" {
			continue
		}
		if err := e.set(v); err != nil {
			return err
		}
	}
	return nil
}

// describe is the name → help map of vars.
func describe(vars ...[]envVar) map[string]string {
	out := map[string]string{}
	for _, list := range vars {
		for _, e := range list {
			out[e.name] = e.help
		}
	}
	return out
}

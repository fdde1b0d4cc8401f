package config

import (
	"reflect"
	"testing"
)

// Every variable of every section's table sets a field of its section, and
// no two variables of a section set the same one: a table line bound to the
// wrong field (a copy-paste of the line above) fails here.
func TestEveryEnvVarSetsItsOwnField(t *testing.T) {
	sections := map[string]func() (any, []envVar){
		"root":  func() (any, []envVar) { c := new(Config); return c, c.envVars() },
		"serve": func() (any, []envVar) { s := new(ServeConfig); return s, s.envVars() },
		"app":   func() (any, []envVar) { a := new(AppConfig); return a, a.envVars() },
		"llm":   func() (any, []envVar) { l := new(LLMConfig); return l, l.envVars() },
		"pool":  func() (any, []envVar) { p := new(PoolConfig); return p, p.envVars() },
		"mcp":   func() (any, []envVar) { m := new(MCPConfig); return m, m.envVars() },
	}
	total := 0
	for name, fresh := range sections {
		_, vars := fresh()
		var seen []any
		for i, e := range vars {
			sec, bound := fresh()
			only := bound[i].name
			getenv := func(k string) string {
				if k == only {
					return " 7 " // a number, a string, a list and a label all at once
				}
				return ""
			}
			if err := applyEnvVars(getenv, bound); err != nil {
				t.Fatalf("%s: %s=7: %v", name, e.name, err)
			}
			zero, _ := fresh()
			if reflect.DeepEqual(sec, zero) {
				t.Errorf("%s: %s=7 changed nothing", name, e.name)
			}
			for j, prev := range seen {
				if reflect.DeepEqual(sec, prev) {
					t.Errorf("%s: %s and %s set the same field", name, vars[j].name, e.name)
				}
			}
			seen = append(seen, sec)
			total++
		}
	}
	total += len(loaderEnvVars()) // they choose the file and set no field
	if got := len(ConfigEnvVars()); got != total {
		t.Errorf("ConfigEnvVars has %d names, the tables %d: a name is listed twice", got, total)
	}
}

// A blank or white-space value leaves the field as the file set it, and a
// value that does not parse is an error that names the variable.
func TestApplyEnvVarsBlankAndInvalid(t *testing.T) {
	l := LLMConfig{Model: "from-file"}
	env := map[string]string{"ASTER_LLM_MODEL": "   ", "ASTER_LLM_MAX_COST_USD": "cheap"}
	err := applyEnvVars(func(k string) string { return env[k] }, l.envVars())
	if err == nil || err.Error() != `ASTER_LLM_MAX_COST_USD: "cheap" is not a number` {
		t.Fatalf("err = %v", err)
	}
	if l.Model != "from-file" {
		t.Errorf("blank ASTER_LLM_MODEL replaced the file's model with %q", l.Model)
	}
}

package config

import (
	"strings"
	"testing"
)

func TestLogFormat(t *testing.T) {
	for _, ok := range []string{"text", "json", "JSON", " text "} {
		if _, err := ParseLogFormat(ok); err != nil {
			t.Errorf("ParseLogFormat(%q): %v", ok, err)
		}
	}
	if _, err := ParseLogFormat("jsno"); err == nil || !strings.Contains(err.Error(), `did you mean "json"?`) {
		t.Errorf("jsno: %v", err)
	}
	p := writeConfig(t, "log_format: yaml\n")
	if _, err := Load(p, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "log_format") {
		t.Errorf("log_format: yaml accepted: %v", err)
	}
	env := map[string]string{"ASTER_LOG_FORMAT": "xml"}
	if _, err := Load("", func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "ASTER_LOG_FORMAT") {
		t.Errorf("ASTER_LOG_FORMAT=xml accepted: %v", err)
	}
	env["ASTER_LOG_FORMAT"] = "json"
	if c, err := Load("", func(k string) string { return env[k] }); err != nil || c.LogFormat != "json" {
		t.Errorf("ASTER_LOG_FORMAT=json: %q %v", c.LogFormat, err)
	}
}

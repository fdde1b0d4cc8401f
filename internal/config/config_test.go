package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

func TestValidateLimits(t *testing.T) {
	if err := ValidateLimits(DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	mut := map[string]func(*sandbox.Limits){
		"timeout":        func(l *sandbox.Limits) { l.TimeoutMS = 10 },
		"huge timeout":   func(l *sandbox.Limits) { l.TimeoutMS = 365 * 24 * 3600 * 1000 },
		"memory":         func(l *sandbox.Limits) { l.MemoryBytes = 1 << 20 },
		"cpus":           func(l *sandbox.Limits) { l.MilliCPUs = 0 },
		"pids":           func(l *sandbox.Limits) { l.Pids = -1 },
		"output":         func(l *sandbox.Limits) { l.OutputBytes = 1 << 40 },
		"ceiling<output": func(l *sandbox.Limits) { l.OutputCeilingBytes = l.OutputBytes - 1 },
		"workdir":        func(l *sandbox.Limits) { l.WorkdirBytes = 1 << 50 },
		"tmp":            func(l *sandbox.Limits) { l.TmpBytes = 0 },
	}
	for name, m := range mut {
		l := DefaultLimits()
		m(&l)
		err := ValidateLimits(l)
		if !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Errorf("%s: %v", name, err)
		}
	}
	l := DefaultLimits()
	l.MemoryBytes = 1 << 20
	if err := ValidateLimits(l); !strings.Contains(err.Error(), "memory 1MiB is out of range (16MiB to 64GiB)") {
		t.Errorf("message does not teach: %v", err)
	}
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "aster.yaml")
	yaml := "images: [custom:1, other:2]\nlimits:\n  memory: 256m\n  timeout: 10s\nreaper:\n  grace: 5s\nserve:\n  addr: 127.0.0.1:9999\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ASTER_TIMEOUT": "20s", "ASTER_LABELS": "team=a, tier=b"}
	c, err := Load(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.SandboxLimits()
	if err != nil {
		t.Fatal(err)
	}
	if c.Images[0] != "custom:1" || l.MemoryBytes != 256<<20 || l.TimeoutMS != 20000 || l.Pids != DefaultPids {
		t.Fatalf("precedence wrong: images %v limits %+v", c.Images, l)
	}
	if c.Labels["team"] != "a" || c.Labels["tier"] != "b" {
		t.Fatalf("labels %v", c.Labels)
	}
	if _, ok := c.Extra["serve"]; !ok {
		t.Fatal("unknown sections must be kept for their owners")
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), func(string) string { return "" }); err == nil {
		t.Fatal("an explicit missing config file must be an error")
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("limits: [not, a, map]\n"), 0o644)
	if _, err := Load(bad, func(string) string { return "" }); err == nil {
		t.Fatal("malformed config accepted")
	}
	env = map[string]string{"ASTER_MEMORY": "lots"}
	c, _ = Load("", func(k string) string { return env[k] })
	if _, err := c.SandboxLimits(); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("bad env value: %v", err)
	}
}

// DefaultLimitsConfig writes every limit of DefaultLimits, and the same
// values: aster exec's help states them as the defaults.
func TestDefaultLimitsConfigIsDefaultLimits(t *testing.T) {
	lc, want := DefaultLimitsConfig(), DefaultLimits()
	for _, f := range sandbox.LimitFields() {
		text := *lc.Field(f.Name)
		if text == "" {
			t.Errorf("no default for %s", f.Name)
			continue
		}
		if v, err := ParseLimit(f, text); err != nil || v != *f.Of(&want) {
			t.Errorf("%s %q = %d, %v; want %d", f.Name, text, v, err, *f.Of(&want))
		}
	}
}

// TestReaperDefaultsFormat: the reaper's defaults are written as
// units.FormatDuration writes them.
func TestReaperDefaultsFormat(t *testing.T) {
	if r := Default().Reaper; r.Grace != "30s" || r.Period != "1m" || r.Allowance != "2m" {
		t.Errorf("reaper defaults %+v", r)
	}
}

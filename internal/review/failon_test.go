package review

import (
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/repoconfig"
)

// TestEffectiveFailOn: an override is read as the CLI accepts it (any case,
// "warn", "info"), so an accepted value never silently means "never".
func TestEffectiveFailOn(t *testing.T) {
	repo := repoconfig.Config{FailOn: "warning"}
	for _, c := range []struct {
		cfg      repoconfig.Config
		override string
		want     finding.Severity
	}{
		{repoconfig.Config{}, "", finding.Error},
		{repo, "", finding.Warning},
		{repo, "never", ""},
		{repo, "error", finding.Error},
		{repo, "Error", finding.Error},
		{repo, "warn", finding.Warning},
		{repo, " NOTE ", finding.Note},
		{repo, "info", finding.Note},
	} {
		got, err := effectiveFailOn(c.cfg, c.override)
		if err != nil || got != c.want {
			t.Errorf("config %q, override %q: %q, %v; want %q", c.cfg.FailOn, c.override, got, err, c.want)
		}
	}
	if _, err := effectiveFailOn(repo, "critical"); err == nil {
		t.Error(`override "critical" accepted`)
	}
}

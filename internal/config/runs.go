package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/units"
)

// DefaultRunsDBFile is the SQLite file of the API's asynchronous runs, in
// the data directory (DefaultDataDir).
const DefaultRunsDBFile = "runs.db"

// RunsConfig is `serve.runs:`: where the asynchronous runs of /v1/runs are
// kept and for how long.
type RunsConfig struct {
	// DB is the SQLite file (default DATA_DIR/runs.db); "off" keeps no runs
	// (the /v1/runs routes answer 404).
	DB string `yaml:"db"`
	// DatabaseURL (postgres://...) replaces the SQLite file.
	DatabaseURL string `yaml:"database_url"`
	// Retention is how long a finished run's result is kept (default 24h);
	// MaxBytes bounds the results kept in all (default 1g).
	Retention string `yaml:"retention"`
	MaxBytes  string `yaml:"max_bytes"`
}

// CallbacksConfig is `serve.callbacks:`: where a run's result may be POSTed.
type CallbacksConfig struct {
	// Allow lists "host" or "host:port" entries; empty: no callbacks.
	Allow []string `yaml:"allow"`
	// SecretFile holds the HMAC key of the callbacks' signatures.
	SecretFile string `yaml:"secret_file"`
}

// RunsSettings are the parsed values of RunsConfig and CallbacksConfig.
type RunsSettings struct {
	Off            bool
	DB             string
	DatabaseURL    string
	Retention      time.Duration
	MaxBytes       int64
	CallbackAllow  []string
	CallbackSecret []byte
}

// RunsSettings parses s's runs and callbacks (ASTER_RUNS_DB and
// ASTER_RUNS_DATABASE_URL are read into s by ServeSection; a URL with a
// password is better kept in the environment than on a command line).
func (s ServeConfig) RunsSettings(getenv func(string) string, retentionDefault time.Duration, maxBytesDefault int64) (RunsSettings, error) {
	out := RunsSettings{DB: strings.TrimSpace(s.Runs.DB), DatabaseURL: strings.TrimSpace(s.Runs.DatabaseURL),
		Retention: retentionDefault, MaxBytes: maxBytesDefault}
	var errs []error
	switch {
	case out.DB == "off":
		out.Off, out.DB = true, ""
	case out.DB == "":
		out.DB = filepath.Join(DefaultDataDir(getenv), DefaultRunsDBFile)
	}
	if out.DatabaseURL != "" && !strings.HasPrefix(out.DatabaseURL, "postgres://") && !strings.HasPrefix(out.DatabaseURL, "postgresql://") {
		errs = append(errs, errors.New("runs.database_url: want a postgres:// URL"))
	}
	if v := strings.TrimSpace(s.Runs.Retention); v != "" {
		d, err := units.ParseDuration(v)
		if err != nil || d < time.Minute {
			errs = append(errs, fmt.Errorf("runs-retention %q: want a duration of at least 1m", v))
		} else {
			out.Retention = d
		}
	}
	if v := strings.TrimSpace(s.Runs.MaxBytes); v != "" {
		n, err := units.ParseBytes(v)
		if err != nil || n < 1<<20 {
			errs = append(errs, fmt.Errorf("runs-max-bytes %q: want a size of at least 1m", v))
		} else {
			out.MaxBytes = n
		}
	}
	for _, a := range s.Callbacks.Allow {
		if a = strings.TrimSpace(a); a == "" || strings.ContainsAny(a, "/@ \t") {
			errs = append(errs, fmt.Errorf("callbacks.allow entry %q: want host or host:port", a))
			continue
		}
		out.CallbackAllow = append(out.CallbackAllow, a)
	}
	if len(out.CallbackAllow) > 0 {
		if s.Callbacks.SecretFile == "" {
			errs = append(errs, errors.New("callbacks.allow is set but callbacks.secret_file is not (--callback-secret-file): callbacks are always signed"))
		} else if b, err := os.ReadFile(s.Callbacks.SecretFile); err != nil {
			errs = append(errs, fmt.Errorf("callback secret: %w", err))
		} else if sec := strings.TrimSpace(string(b)); len(sec) < 16 {
			errs = append(errs, fmt.Errorf("callback secret in %s: shorter than 16 characters", s.Callbacks.SecretFile))
		} else {
			out.CallbackSecret = []byte(sec)
		}
	}
	return out, errors.Join(errs...)
}

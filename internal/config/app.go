package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/units"
)

// Defaults of `aster app serve`. The job queue's (workers, job timeout, retries,
// lease, polling, rescue) are the store package's own.
const (
	DefaultAppAddr        = "127.0.0.1:8090"
	DefaultGitHubAPIURL   = github.DefaultAPIURL
	DefaultAppWorkers     = store.DefaultWorkers
	MaxAppWorkers         = 256
	DefaultAppDBFile      = "aster.db"
	DefaultAppJobTimeout  = store.DefaultJobTimeout
	DefaultAppMaxAttempts = store.DefaultMaxAttempts
	DefaultAppRetryBase   = store.DefaultRetryBase
	DefaultAppRetryMax    = store.DefaultRetryMax
	DefaultAppLease       = store.DefaultLease
	DefaultAppBusySnooze  = store.DefaultBusySnooze
	// DefaultAppPollInterval is how often idle workers look for jobs another process
	// queued (jobs queued by the same process start at once).
	DefaultAppPollInterval = store.DefaultPollInterval
	// DefaultAppRetention is how long delivery ids and per-run progress are kept (GitHub
	// offers redelivery of recent deliveries only); the review history is kept.
	DefaultAppRetention    = 30 * 24 * time.Hour
	DefaultAppShutdownWait = 30 * time.Second
	// DefaultAppRescueMargin is added to the job timeout to decide when another replica's
	// job, still marked running, was lost with its process and is run again.
	DefaultAppRescueMargin = store.DefaultRescueMargin
	// DefaultAppWebhookTimeout bounds how long storing one delivery may take, so the
	// answer reaches GitHub well inside its 10-second delivery timeout.
	DefaultAppWebhookTimeout = 5 * time.Second
	// DefaultAppWebhookInflightBytes and DefaultAppWebhookBodyTimeout are the
	// webhook receiver's own (internal/github).
	DefaultAppWebhookInflightBytes = github.DefaultWebhookInflightBytes
	DefaultAppWebhookBodyTimeout   = github.DefaultWebhookBodyTimeout
	// DefaultAppSetupAddr is where `aster app setup` serves its page (loopback only).
	DefaultAppSetupAddr = "127.0.0.1:8092"
	// DefaultAppSetupTimeout is how long `aster app setup` waits for GitHub's answer (GitHub's
	// manifest codes expire after an hour).
	DefaultAppSetupTimeout = 30 * time.Minute
)

// Defaults of the GitHub client: the github package's own. DefaultGitHubAPIURL
// above is the REST API root it uses when none is given.
const (
	DefaultGitHubWebURL           = github.DefaultWebURL
	DefaultGitHubMaxTarballBytes  = github.DefaultMaxTarballBytes
	DefaultGitHubMaxFileBytes     = github.DefaultMaxFileBytes
	DefaultGitHubMaxDiffBytes     = github.DefaultMaxDiffBytes
	DefaultGitHubRetryAttempts    = github.DefaultRetryAttempts
	DefaultGitHubRetryBase        = github.DefaultRetryBase
	DefaultGitHubRetryMax         = github.DefaultRetryMax
	DefaultGitHubMaxRateLimitWait = github.DefaultMaxRateLimitWait
)

// AppConfig is the `app:` section of aster.yaml, for `aster app serve` and `aster app
// history`. Durations are in human units; an empty field takes its default.
type AppConfig struct {
	Addr              string `yaml:"addr"`
	AppID             string `yaml:"app_id"`
	PrivateKeyFile    string `yaml:"private_key_file"`
	WebhookSecretFile string `yaml:"webhook_secret_file"`
	GitHubAPIURL      string `yaml:"github_api_url"`
	// Forge is github (default: a GitHub App) or gitea (Gitea or Forgejo through a bot
	// account: ForgeURL is its root, ForgeTokenFile holds the bot's token).
	Forge          string `yaml:"forge"`
	ForgeURL       string `yaml:"forge_url"`
	ForgeTokenFile string `yaml:"forge_token_file"`
	// DataDir holds the SQLite database by default.
	DataDir string `yaml:"data_dir"`
	// DB is the SQLite file; DatabaseURL (postgres://...) replaces it.
	DB          string `yaml:"db"`
	DatabaseURL string `yaml:"database_url"`
	Workers     string `yaml:"workers"`
	// SandboxURL is a remote `aster sandbox serve`; empty runs sandboxes in-process.
	SandboxURL       string `yaml:"sandbox_url"`
	SandboxTokenFile string `yaml:"sandbox_token_file"`
	ReviewDrafts     bool   `yaml:"review_drafts"`
	// Tests runs every repository's tests (detected when .aster.yml names no command);
	// without it, tests run only where the base .aster.yml has a tests.command.
	Tests bool `yaml:"tests"`
	// ReplicaID names this process among replicas sharing one Postgres database
	// (default: the host name). Two live processes must never share one.
	ReplicaID     string `yaml:"replica_id"`
	JobTimeout    string `yaml:"job_timeout"`
	MaxAttempts   string `yaml:"max_attempts"`
	RetryBase     string `yaml:"retry_base"`
	RetryMax      string `yaml:"retry_max"`
	Lease         string `yaml:"lease"`
	ShutdownGrace string `yaml:"shutdown_grace"`
	// WebhookInflightBytes caps the webhook body bytes being read at once ("64MiB").
	WebhookInflightBytes string `yaml:"webhook_inflight_bytes"`
}

// envVars binds the ASTER_* variables of the `app:` section to the fields of a.
func (a *AppConfig) envVars() []envVar {
	return []envVar{
		str("ASTER_APP_ADDR", &a.Addr, "address `aster app serve` listens on"),
		str("ASTER_APP_ID", &a.AppID, "the GitHub App's id"),
		str("ASTER_APP_PRIVATE_KEY_FILE", &a.PrivateKeyFile, "the App's private key (PEM file)"),
		str("ASTER_APP_WEBHOOK_SECRET_FILE", &a.WebhookSecretFile, "file holding the App's webhook secret"),
		str("ASTER_APP_FORGE", &a.Forge, "github (a GitHub App) or gitea (Gitea or Forgejo through a bot account)"),
		str("ASTER_APP_FORGE_URL", &a.ForgeURL, "the Gitea or Forgejo root URL (with forge gitea)"),
		str("ASTER_APP_FORGE_TOKEN_FILE", &a.ForgeTokenFile, "file holding the Gitea bot account's access token"),
		str("ASTER_GITHUB_API_URL", &a.GitHubAPIURL, "GitHub REST API root (GitHub Enterprise Server: https://HOST/api/v3/)"),
		str("ASTER_DATA_DIR", &a.DataDir, "directory of the default SQLite database"),
		str("ASTER_DB", &a.DB, "SQLite database file"),
		str("ASTER_DATABASE_URL", &a.DatabaseURL, "postgres://... database shared by replicas (replaces the SQLite file)"),
		str("ASTER_APP_WORKERS", &a.Workers, "reviews run at once"),
		str("ASTER_SANDBOX_URL", &a.SandboxURL, "remote `aster sandbox serve` to run sandboxes on"),
		str("ASTER_SANDBOX_TOKEN_FILE", &a.SandboxTokenFile, "bearer token file for the remote sandbox server"),
		str("ASTER_REPLICA_ID", &a.ReplicaID, "this replica's name among replicas sharing one database"),
	}
}

// AppSection decodes the `app:` section of c (absent: all defaults) and applies the
// ASTER_* variables of envVars over it.
func (c Config) AppSection(getenv func(string) string) (AppConfig, error) {
	var a AppConfig
	if err := c.loadSection("app", &a, getenv); err != nil {
		return a, err
	}
	fill := fillBlank
	fill(&a.Addr, DefaultAppAddr)
	fill(&a.GitHubAPIURL, DefaultGitHubAPIURL)
	fill(&a.Workers, strconv.Itoa(DefaultAppWorkers))
	fill(&a.JobTimeout, DefaultAppJobTimeout.String())
	fill(&a.MaxAttempts, strconv.Itoa(DefaultAppMaxAttempts))
	fill(&a.RetryBase, DefaultAppRetryBase.String())
	fill(&a.RetryMax, DefaultAppRetryMax.String())
	fill(&a.Lease, DefaultAppLease.String())
	fill(&a.ShutdownGrace, DefaultAppShutdownWait.String())
	fill(&a.WebhookInflightBytes, units.FormatBytes(DefaultAppWebhookInflightBytes))
	if a.DataDir == "" {
		a.DataDir = DefaultDataDir(getenv)
	}
	if a.DB == "" {
		a.DB = filepath.Join(a.DataDir, DefaultAppDBFile)
	}
	return a, nil
}

// DefaultDataDir is where Aster keeps its state without configuration:
// $XDG_DATA_HOME/aster, else ~/.local/share/aster, else ./aster-data.
func DefaultDataDir(getenv func(string) string) string {
	if x := getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "aster")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "aster")
	}
	return "aster-data"
}

// AppSettings are the parsed, validated values of an AppConfig.
type AppSettings struct {
	Addr string
	// Forge is ForgeGitHub or ForgeGitea; ForgeURL and ForgeTokenFile are set for Gitea,
	// AppID, PrivateKeyFile and GitHubAPIURL for GitHub.
	Forge             string
	ForgeURL          string
	ForgeTokenFile    string
	AppID             int64
	PrivateKeyFile    string
	WebhookSecretFile string
	GitHubAPIURL      string
	DB                string
	DatabaseURL       string
	Workers           int
	SandboxURL        string
	SandboxTokenFile  string
	ReviewDrafts      bool
	Tests             bool
	ReplicaID         string
	JobTimeout        time.Duration
	MaxAttempts       int
	RetryBase         time.Duration
	RetryMax          time.Duration
	Lease             time.Duration
	ShutdownGrace     time.Duration
	// WebhookInflightBytes is at least MinAppWebhookInflightBytes.
	WebhookInflightBytes int64
}

// The forges `aster app serve` speaks to.
const (
	ForgeGitHub = "github"
	ForgeGitea  = "gitea"
)

// MinAppWebhookInflightBytes is one delivery of GitHub's largest size (25 MB): a smaller
// budget would refuse deliveries GitHub may legitimately send.
const MinAppWebhookInflightBytes int64 = 25 << 20

// ParseStore validates only what opening the store needs (for `aster app history`).
func (a AppConfig) ParseStore() (db, databaseURL string, err error) {
	db, databaseURL = strings.TrimSpace(a.DB), strings.TrimSpace(a.DatabaseURL)
	if databaseURL != "" {
		u, perr := url.Parse(databaseURL)
		if perr != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			// Never echo the URL: it usually carries a password.
			return "", "", errors.New("database-url: want postgres://user:password@host:port/db")
		}
	} else if db == "" {
		return "", "", errors.New("db: empty SQLite path")
	}
	return db, databaseURL, nil
}

// parseGitHub validates the GitHub App's settings into out.
func (a AppConfig) parseGitHub(out *AppSettings) []error {
	var errs []error
	if id, err := strconv.ParseInt(strings.TrimSpace(a.AppID), 10, 64); err != nil || id <= 0 {
		errs = append(errs, errors.New("app-id: want the App's numeric id (GitHub shows it on the App's settings page)"))
	} else {
		out.AppID = id
	}
	if out.PrivateKeyFile == "" {
		errs = append(errs, errors.New("private-key: the App's PEM key file is required"))
	}
	if u, err := url.Parse(strings.TrimSpace(a.GitHubAPIURL)); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("github-api-url %q: want https://api.github.com/ or https://HOST/api/v3/", a.GitHubAPIURL))
	} else {
		out.GitHubAPIURL = u.String()
	}
	return errs
}

// Parse validates a for `aster app serve`.
func (a AppConfig) Parse() (AppSettings, error) {
	out := AppSettings{
		Addr: strings.TrimSpace(a.Addr), PrivateKeyFile: a.PrivateKeyFile, WebhookSecretFile: a.WebhookSecretFile,
		SandboxURL: strings.TrimSpace(a.SandboxURL), SandboxTokenFile: a.SandboxTokenFile,
		ReviewDrafts: a.ReviewDrafts, Tests: a.Tests, ReplicaID: strings.TrimSpace(a.ReplicaID),
	}
	var errs []error
	var err error
	if out.DB, out.DatabaseURL, err = a.ParseStore(); err != nil {
		errs = append(errs, err)
	}
	if out.Addr == "" {
		errs = append(errs, errors.New("addr is empty"))
	}
	switch out.Forge = strings.ToLower(strings.TrimSpace(a.Forge)); out.Forge {
	case "", ForgeGitHub:
		out.Forge = ForgeGitHub
		errs = append(errs, a.parseGitHub(&out)...)
	case ForgeGitea:
		out.ForgeTokenFile = strings.TrimSpace(a.ForgeTokenFile)
		if u, err := url.Parse(strings.TrimSpace(a.ForgeURL)); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			// Never echo the URL: a mistaken one may carry a password.
			errs = append(errs, errors.New("forge-url: want the Gitea root, like https://gitea.example.com/ (http or https, no credentials in it)"))
		} else {
			out.ForgeURL = u.String()
		}
		if out.ForgeTokenFile == "" {
			errs = append(errs, errors.New("forge-token-file: the file holding the Gitea bot account's access token is required"))
		}
	default:
		errs = append(errs, fmt.Errorf("forge %q: want github or gitea", a.Forge))
	}
	if out.WebhookSecretFile == "" {
		errs = append(errs, errors.New("webhook-secret-file: required"))
	}
	if out.SandboxURL != "" {
		if u, err := url.Parse(out.SandboxURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("sandbox-url %q: want http://host:port or https://host:port", out.SandboxURL))
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(a.Workers)); err != nil || n < 1 || n > MaxAppWorkers {
		errs = append(errs, fmt.Errorf("workers %q: want a whole number from 1 to %d", a.Workers, MaxAppWorkers))
	} else {
		out.Workers = n
	}
	if n, err := strconv.Atoi(strings.TrimSpace(a.MaxAttempts)); err != nil || n < 1 || n > 100 {
		errs = append(errs, fmt.Errorf("max-attempts %q: want a whole number from 1 to 100", a.MaxAttempts))
	} else {
		out.MaxAttempts = n
	}
	dur := func(name, v string, dst *time.Duration, min time.Duration) {
		d, err := units.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		case d < min:
			errs = append(errs, fmt.Errorf("%s %s is under %s", name, d, min))
		default:
			*dst = d
		}
	}
	dur("job-timeout", a.JobTimeout, &out.JobTimeout, time.Second)
	dur("retry-base", a.RetryBase, &out.RetryBase, 10*time.Millisecond)
	dur("retry-max", a.RetryMax, &out.RetryMax, 10*time.Millisecond)
	dur("lease", a.Lease, &out.Lease, time.Second)
	dur("shutdown-grace", a.ShutdownGrace, &out.ShutdownGrace, 0)
	if strings.TrimSpace(a.WebhookInflightBytes) == "" {
		out.WebhookInflightBytes = DefaultAppWebhookInflightBytes
	} else if n, err := units.ParseBytes(a.WebhookInflightBytes); err != nil || n < MinAppWebhookInflightBytes {
		errs = append(errs, fmt.Errorf("webhook-inflight-bytes %q: want a size of at least 25MiB (one maximal delivery)", a.WebhookInflightBytes))
	} else {
		out.WebhookInflightBytes = n
	}
	if out.RetryMax < out.RetryBase {
		out.RetryMax = out.RetryBase
	}
	if out.ReplicaID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "aster"
		}
		out.ReplicaID = host
	}
	if len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	return out, nil
}

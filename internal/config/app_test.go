package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAppSectionDefaultsAndEnv(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	getenv := func(k string) string { return env[k] }
	a, err := Default().AppSection(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if a.Addr != DefaultAppAddr || a.DB != "/home/u/.local/share/aster/aster.db" || a.GitHubAPIURL != DefaultGitHubAPIURL {
		t.Fatalf("defaults: %+v", a)
	}
	if _, err := a.Parse(); err == nil || !strings.Contains(err.Error(), "app-id") || !strings.Contains(err.Error(), "private-key") {
		t.Fatalf("missing app id and key must be refused, got %v", err)
	}
	env["ASTER_APP_ID"], env["ASTER_APP_PRIVATE_KEY_FILE"], env["ASTER_APP_WEBHOOK_SECRET_FILE"] = "42", "/k.pem", "/s"
	env["ASTER_DATABASE_URL"], env["ASTER_DATA_DIR"] = "postgres://u:hunter2@db/aster", "/var/lib/aster"
	a, _ = Default().AppSection(getenv)
	s, err := a.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if s.AppID != 42 || s.DatabaseURL == "" || s.DB != "/var/lib/aster/aster.db" || s.Workers != DefaultAppWorkers ||
		s.JobTimeout != DefaultAppJobTimeout || s.MaxAttempts != DefaultAppMaxAttempts || s.ReplicaID == "" {
		t.Fatalf("settings: %+v", s)
	}
	a.DatabaseURL = "mysql://u:hunter2@db/aster"
	if _, err := a.Parse(); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a non-postgres URL must be refused without echoing it: %v", err)
	}
	a.DatabaseURL, a.Workers, a.JobTimeout, a.GitHubAPIURL = "", "0", "1ms", "ftp://x"
	_, err = a.Parse()
	for _, want := range []string{"workers", "job-timeout", "github-api-url"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestDeployExampleConfig(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "deploy", "aster-app.yaml"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.AppSection(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Parse()
	if err != nil {
		t.Fatalf("deploy/aster-app.yaml: %v", err)
	}
	if s.AppID != 123456 || s.DB != "/var/lib/aster/aster.db" || s.JobTimeout != 20*time.Minute || s.Workers != 2 {
		t.Fatalf("settings from the example: %+v", s)
	}
}

package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Files `aster app setup` writes into the data directory, where `aster app serve` finds them
// when it is given no App id.
const (
	AppRegistrationFile  = "github-app.json"
	AppPrivateKeyFile    = "app.pem"
	AppWebhookSecretFile = "webhook-secret"
)

// AppRegistration is the App `aster app setup` created: what `aster app serve` needs besides
// the secrets themselves, which live in the files it names (mode 0600).
type AppRegistration struct {
	AppID             int64  `json:"app_id"`
	Slug              string `json:"slug,omitempty"`
	HTMLURL           string `json:"html_url,omitempty"`
	Owner             string `json:"owner,omitempty"`
	ClientID          string `json:"client_id,omitempty"`
	GitHubURL         string `json:"github_url"`
	GitHubAPIURL      string `json:"github_api_url"`
	PrivateKeyFile    string `json:"private_key_file"`
	WebhookSecretFile string `json:"webhook_secret_file"`
}

// ReadAppRegistration reads dir's registration; ok is false when there is none.
func ReadAppRegistration(dir string) (reg AppRegistration, ok bool, err error) {
	p := filepath.Join(dir, AppRegistrationFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return reg, false, nil
	}
	if err != nil {
		return reg, false, fmt.Errorf("app registration: %w", err)
	}
	if len(b) > 64<<10 {
		return reg, false, fmt.Errorf("app registration %s: larger than 64 KiB", p)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&reg); err != nil {
		return reg, false, fmt.Errorf("app registration %s: %w", p, err)
	}
	if reg.AppID <= 0 || reg.PrivateKeyFile == "" || reg.WebhookSecretFile == "" {
		return reg, false, fmt.Errorf("app registration %s: needs app_id, private_key_file and webhook_secret_file", p)
	}
	return reg, true, nil
}

// WriteAppRegistration writes the private key and the webhook secret (0600) and then the
// registration naming them into dir (created 0700). It refuses to replace an existing
// registration unless replace is set. The files' paths in reg are filled in.
func WriteAppRegistration(dir string, reg *AppRegistration, privateKey, webhookSecret []byte, replace bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("app registration directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if !replace {
		if err := CheckNoAppRegistration(abs); err != nil {
			return err
		}
	}
	reg.PrivateKeyFile = filepath.Join(abs, AppPrivateKeyFile)
	reg.WebhookSecretFile = filepath.Join(abs, AppWebhookSecretFile)
	if err := writeFileAtomic(reg.PrivateKeyFile, privateKey); err != nil {
		return err
	}
	if err := writeFileAtomic(reg.WebhookSecretFile, append(append([]byte(nil), webhookSecret...), '\n')); err != nil {
		return err
	}
	b, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(abs, AppRegistrationFile), append(b, '\n'))
}

// CheckNoAppRegistration fails when dir already holds a registration, a key or a secret.
func CheckNoAppRegistration(dir string) error {
	for _, name := range []string{AppRegistrationFile, AppPrivateKeyFile, AppWebhookSecretFile} {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists: an App is already set up there (give --force to replace it, or --dir for another directory)", p)
		}
	}
	return nil
}

// writeFileAtomic writes b to path with mode 0600 through a temporary file in the same
// directory, so a reader never sees half a key and the file is never briefly readable by others.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ApplyRegistration fills the App id, the key and secret files and the API URL from the data
// directory's registration, when no App id is configured (a configured one means the
// registration is not the App in use). A GitHub API URL other than the default is kept. It
// returns whether a registration was applied.
func (a *AppConfig) ApplyRegistration() (bool, error) {
	if strings.TrimSpace(a.AppID) != "" {
		return false, nil
	}
	reg, ok, err := ReadAppRegistration(a.DataDir)
	if err != nil || !ok {
		return false, err
	}
	a.AppID = strconv.FormatInt(reg.AppID, 10)
	if a.PrivateKeyFile == "" {
		a.PrivateKeyFile = reg.PrivateKeyFile
	}
	if a.WebhookSecretFile == "" {
		a.WebhookSecretFile = reg.WebhookSecretFile
	}
	if api := strings.TrimSpace(a.GitHubAPIURL); (api == "" || api == DefaultGitHubAPIURL) && reg.GitHubAPIURL != "" {
		a.GitHubAPIURL = reg.GitHubAPIURL
	}
	return true, nil
}

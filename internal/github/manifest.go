package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	gh "github.com/google/go-github/v81/github"

	"github.com/asterhq/aster/internal/backoff"
)

// The App-manifest flow (docs.github.com, "Registering a GitHub App from a manifest"): a
// browser posts a manifest to GitHub's "new App" page, the user confirms, GitHub redirects to
// the manifest's redirect_url with a one-time code, and the code is exchanged through the API
// for the App's id, private key and webhook secret.

// ProjectURL is the App's homepage in the manifest.
const ProjectURL = "https://github.com/asterhq/aster"

// MaxAppNameLen is the longest App name GitHub accepts.
const MaxAppNameLen = 34

// Manifest is what `aster app setup` posts to GitHub: the App as Aster needs it, with
// exactly the permissions of TokenPermissions and the events the webhook handles.
type Manifest struct {
	Name               string            `json:"name"`
	URL                string            `json:"url"`
	Description        string            `json:"description,omitempty"`
	Public             bool              `json:"public"`
	HookAttributes     ManifestHook      `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// ManifestHook is the webhook of a Manifest.
type ManifestHook struct {
	URL    string `json:"url"`
	Active bool   `json:"active"`
}

// ManifestEvents are the events the App subscribes to. installation needs no subscription
// (GitHub sends it to every App) and is refused in a manifest. pull_request_review_thread
// tells the App at once that a person resolved one of its threads (a dismissal), and
// pull_request_review_comment that a person replied in one (/aster ignore or unignore).
func ManifestEvents() []string {
	return []string{"pull_request", "issue_comment", "pull_request_review_thread", "pull_request_review_comment"}
}

// ManifestOptions configure NewManifest.
type ManifestOptions struct {
	// Name of the App; GitHub's page lets the user change it before creating the App.
	Name string
	// PublicURL is where GitHub reaches `aster app serve` (its reverse proxy), https://HOST[/PREFIX];
	// the webhook is PublicURL + "/webhook".
	PublicURL string
	// RedirectURL is where GitHub sends the browser back with the code.
	RedirectURL string
}

// NewManifest builds and checks the manifest.
func NewManifest(o ManifestOptions) (Manifest, error) {
	name := strings.TrimSpace(o.Name)
	if name == "" || utf8.RuneCountInString(name) > MaxAppNameLen {
		return Manifest{}, fmt.Errorf("app name %q: want 1 to %d characters", o.Name, MaxAppNameLen)
	}
	pub, err := url.Parse(strings.TrimSpace(o.PublicURL))
	if err != nil || (pub.Scheme != "https" && pub.Scheme != "http") || pub.Host == "" || pub.User != nil ||
		pub.RawQuery != "" || pub.Fragment != "" {
		return Manifest{}, fmt.Errorf("public url %q: want https://HOST (where GitHub reaches the App's reverse proxy)", o.PublicURL)
	}
	pub.Path = strings.TrimSuffix(pub.Path, "/")
	pub.RawPath = ""
	pub.Path = strings.TrimSuffix(pub.Path, "/webhook")
	if _, err := url.ParseRequestURI(o.RedirectURL); err != nil {
		return Manifest{}, fmt.Errorf("redirect url %q: %w", o.RedirectURL, err)
	}
	return Manifest{
		Name:        name,
		URL:         ProjectURL,
		Description: "Self-hosted pull-request reviewer: static checks and tests in sandboxes, then one review.",
		Public:      false,
		HookAttributes: ManifestHook{
			URL:    pub.String() + "/webhook",
			Active: true,
		},
		RedirectURL:        o.RedirectURL,
		DefaultPermissions: TokenPermissions(),
		DefaultEvents:      ManifestEvents(),
	}, nil
}

// GitHubURLs derives the web root (where the manifest is posted) and the REST API root from
// the URL a user gives: github.com (or "") is https://github.com/ and https://api.github.com/;
// any other host is GitHub Enterprise Server, with the API under /api/v3/.
func GitHubURLs(githubURL string) (web, api string, err error) {
	s := strings.TrimSpace(githubURL)
	if s == "" {
		return DefaultWebURL, DefaultAPIURL, nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("github url %q: want https://github.com/ or https://HOST/ of GitHub Enterprise Server", githubURL)
	}
	switch strings.ToLower(u.Host) {
	case "github.com", "www.github.com", "api.github.com":
		return DefaultWebURL, DefaultAPIURL, nil
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.Path = strings.TrimSuffix(u.Path, "/api/v3")
	u.RawPath = ""
	web = u.String() + "/"
	return web, web + "api/v3/", nil
}

// NewAppFormURL is the page the manifest is posted to: the user's own, or an organization's.
func NewAppFormURL(web, org, state string) (string, error) {
	u, err := url.Parse(web)
	if err != nil {
		return "", err
	}
	if org != "" {
		if !validName(org) {
			return "", fmt.Errorf("organization %q: not a GitHub name", org)
		}
		u = u.JoinPath("organizations", org, "settings", "apps", "new")
	} else {
		u = u.JoinPath("settings", "apps", "new")
	}
	u.RawQuery = url.Values{"state": {state}}.Encode()
	return u.String(), nil
}

// AppCredentials are what GitHub returns for a converted manifest. PEM, WebhookSecret and
// ClientSecret are secrets: never logged, never printed.
type AppCredentials struct {
	ID            int64
	Slug          string
	Name          string
	HTMLURL       string
	ClientID      string
	ClientSecret  string
	WebhookSecret string
	PEM           []byte
	Owner         string
}

// InstallURL is the page where the App is installed on repositories.
func (c AppCredentials) InstallURL() string {
	if c.HTMLURL == "" {
		return ""
	}
	return strings.TrimSuffix(c.HTMLURL, "/") + "/installations/new"
}

// ValidManifestCode reports whether code has the shape of a manifest code (GitHub's are short
// hex or base62 strings); anything else never reaches a URL.
func ValidManifestCode(code string) bool {
	if code == "" || len(code) > 128 {
		return false
	}
	for _, r := range code {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// ConvertOptions configure ConvertManifest.
type ConvertOptions struct {
	// APIURL is the REST API root ("" for api.github.com).
	APIURL    string
	Code      string
	Transport http.RoundTripper // nil: a clone of http.DefaultTransport
	Logger    *slog.Logger
}

// ConvertManifest exchanges a manifest code (POST /app-manifests/{code}/conversions, no
// authentication: the code is the credential, valid once and for an hour). A 5xx is not
// retried, since GitHub may have used the code.
func ConvertManifest(ctx context.Context, o ConvertOptions) (AppCredentials, error) {
	if !ValidManifestCode(o.Code) {
		return AppCredentials{}, errors.New("manifest code: not a code GitHub issues")
	}
	tr := o.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	base := o.APIURL
	if base == "" {
		base = DefaultAPIURL
	}
	client, err := newGitHubClient(&http.Client{Transport: tr}, base)
	if err != nil {
		return AppCredentials{}, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &retrier{policy: DefaultRetryPolicy(), log: log, sleep: backoff.Sleep}
	var cfg *gh.AppConfig
	err = r.doCreate(ctx, "convert app manifest", func(ctx context.Context) (resp *gh.Response, err error) {
		cfg, resp, err = client.Apps.CompleteAppManifest(ctx, o.Code)
		return resp, err
	})
	if err != nil {
		return AppCredentials{}, err
	}
	c := AppCredentials{
		ID: cfg.GetID(), Slug: cfg.GetSlug(), Name: cfg.GetName(), HTMLURL: cfg.GetHTMLURL(),
		ClientID: cfg.GetClientID(), ClientSecret: cfg.GetClientSecret(), WebhookSecret: cfg.GetWebhookSecret(),
		PEM: []byte(cfg.GetPEM()), Owner: cfg.GetOwner().GetLogin(),
	}
	switch {
	case c.ID <= 0:
		return AppCredentials{}, errors.New("convert app manifest: GitHub returned no App id")
	case len(c.PEM) == 0:
		return AppCredentials{}, errors.New("convert app manifest: GitHub returned no private key")
	}
	if _, err := NewApp(AppOptions{AppID: c.ID, PrivateKey: c.PEM, BaseURL: base}); err != nil {
		return AppCredentials{}, fmt.Errorf("convert app manifest: %w", err)
	}
	return c, nil
}

// SetWebhookSecret sets the App's webhook secret (PATCH /app/hook/config, as the App), for a
// conversion that returned none.
func (a *App) SetWebhookSecret(ctx context.Context, secret string) error {
	cfg := &gh.HookConfig{Secret: gh.Ptr(secret)}
	return a.retry.do(ctx, "set webhook secret", func(ctx context.Context) (resp *gh.Response, err error) {
		_, resp, err = a.jwt.Apps.UpdateHookConfig(ctx, cfg)
		return resp, err
	})
}

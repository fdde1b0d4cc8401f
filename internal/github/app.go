package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v81/github"

	"github.com/asterhq/aster/internal/backoff"
)

// TokenPermissions returns the only permissions Aster asks for in an installation token (the
// App's manifest grants the same): read code and metadata, write reviews, comments and checks.
func TokenPermissions() map[string]string {
	return map[string]string{"metadata": "read", "contents": "read", "pull_requests": "write", "checks": "write"}
}

// AppOptions configures NewApp.
type AppOptions struct {
	AppID      int64
	PrivateKey []byte // the App's PEM private key; never logged, never in an error
	// BaseURL is the REST API root: "" for github.com, "https://HOST/api/v3/" for GitHub
	// Enterprise Server (the /api/v3/ suffix is added when missing), or a test server.
	BaseURL   string
	Transport http.RoundTripper // nil means a clone of http.DefaultTransport
	Retry     RetryPolicy
	Logger    *slog.Logger
}

// App is a GitHub App: it signs JWTs with its private key and exchanges them for installation
// tokens scoped to one repository. Safe for concurrent use.
type App struct {
	appID     int64
	baseURL   string
	transport http.RoundTripper
	jwt       *gh.Client // authenticated as the App (JWT), for /app and token exchange
	retry     *retrier
	log       *slog.Logger

	mu       sync.Mutex
	botLogin string
}

// NewApp parses the private key and prepares the JWT-authenticated client. It makes no request.
func NewApp(opts AppOptions) (*App, error) {
	if opts.AppID <= 0 {
		return nil, errors.New("github app: app id must be positive")
	}
	tr := opts.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	apps, err := ghinstallation.NewAppsTransport(tr, opts.AppID, opts.PrivateKey)
	if err != nil {
		// ghinstallation's message names the parse failure, not the key bytes; keep only ours.
		return nil, errors.New("github app: private key is not an RSA PEM key")
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultAPIURL
	}
	jwtClient, err := newGitHubClient(&http.Client{Transport: apps}, base)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("app_id", opts.AppID)
	return &App{
		appID:     opts.AppID,
		baseURL:   base,
		transport: tr,
		jwt:       jwtClient,
		retry:     &retrier{policy: opts.Retry.withDefaults(), log: log, sleep: backoff.Sleep},
		log:       log,
	}, nil
}

// newGitHubClient returns a go-github client rooted at base (github.com or an Enterprise/test
// URL ending in /api/v3/).
func newGitHubClient(hc *http.Client, base string) (*gh.Client, error) {
	c := gh.NewClient(hc)
	c.RateLimitRedirectionalEndpoints = true
	if strings.TrimRight(base, "/") == strings.TrimRight(DefaultAPIURL, "/") {
		return c, nil
	}
	c, err := c.WithEnterpriseURLs(base, base)
	if err != nil {
		return nil, fmt.Errorf("github base url: %w", err)
	}
	return c, nil
}

// BotLogin returns the login the App posts as ("<slug>[bot]"), so only its own comments are
// trusted for fingerprints and the summary marker. Fetched once, then cached.
func (a *App) BotLogin(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.botLogin != "" {
		return a.botLogin, nil
	}
	var app *gh.App
	err := a.retry.do(ctx, "get app", func(ctx context.Context) (resp *gh.Response, err error) {
		app, resp, err = a.jwt.Apps.Get(ctx, "")
		return resp, err
	})
	if err != nil {
		return "", err
	}
	if app.GetSlug() == "" {
		return "", errors.New("github get app: empty slug")
	}
	a.botLogin = app.GetSlug() + "[bot]"
	return a.botLogin, nil
}

// ClientOptions picks the installation and the one repository a Client may touch.
type ClientOptions struct {
	InstallationID int64
	Owner, Repo    string
}

// Client returns an API client for one repository of one installation. Its token is minted on
// first use, scoped to that repository and TokenPermissions, and refreshed before it expires.
func (a *App) Client(opts ClientOptions) (*Client, error) {
	if opts.InstallationID <= 0 {
		return nil, errors.New("github client: installation id must be positive")
	}
	if !validName(opts.Owner) || !validName(opts.Repo) {
		return nil, fmt.Errorf("github client: invalid repository %q/%q", opts.Owner, opts.Repo)
	}
	src := &tokenSource{
		app:            a,
		installationID: opts.InstallationID,
		repo:           opts.Repo,
	}
	api, err := newGitHubClient(&http.Client{Transport: &tokenTransport{base: a.transport, src: src}}, a.baseURL)
	if err != nil {
		return nil, err
	}
	log := a.log.With("installation", opts.InstallationID, "repo", opts.Owner+"/"+opts.Repo)
	return &Client{
		api:      api,
		download: &http.Client{Transport: a.transport},
		owner:    opts.Owner,
		repo:     opts.Repo,
		retry:    &retrier{policy: a.retry.policy, log: log, sleep: a.retry.sleep},
		log:      log,
		appID:    a.appID,
	}, nil
}

// tokenSource mints and caches one installation token.
type tokenSource struct {
	app            *App
	installationID int64
	repo           string

	mu      sync.Mutex
	token   string
	expires time.Time
}

// tokenRefreshMargin: a token this close to its expiry is replaced before use.
const tokenRefreshMargin = 5 * time.Minute

// Token returns the cached token, minting a new one when there is none or it is about to
// expire. fresh says whether this call minted it.
func (s *tokenSource) Token(ctx context.Context) (token string, fresh bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && time.Until(s.expires) > tokenRefreshMargin {
		return s.token, false, nil
	}
	perms := &gh.InstallationPermissions{}
	for name, level := range TokenPermissions() {
		l := gh.Ptr(level)
		switch name {
		case "metadata":
			perms.Metadata = l
		case "contents":
			perms.Contents = l
		case "pull_requests":
			perms.PullRequests = l
		case "checks":
			perms.Checks = l
		}
	}
	opts := &gh.InstallationTokenOptions{Repositories: []string{s.repo}, Permissions: perms}
	var tok *gh.InstallationToken
	err = s.app.retry.do(ctx, "create installation token", func(ctx context.Context) (resp *gh.Response, err error) {
		tok, resp, err = s.app.jwt.Apps.CreateInstallationToken(ctx, s.installationID, opts)
		return resp, err
	})
	if err != nil {
		return "", false, err
	}
	if tok.GetToken() == "" {
		return "", false, errors.New("github create installation token: empty token")
	}
	s.token, s.expires = tok.GetToken(), tok.GetExpiresAt().Time
	if s.expires.IsZero() {
		s.expires = time.Now().Add(time.Hour)
	}
	return s.token, true, nil
}

// invalidate drops token if it is still the cached one (GitHub refused it: revoked, or the
// clock is off).
func (s *tokenSource) invalidate(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == token {
		s.token = ""
	}
}

// tokenTransport adds the installation token to every API request.
type tokenTransport struct {
	base http.RoundTripper
	src  *tokenSource
}

// A cached token GitHub answers 401 to is replaced and the request sent once more.
func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	token, fresh, err := t.src.Token(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "token "+token)
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || fresh || (req.Body != nil && req.GetBody == nil) {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	t.src.invalidate(token)
	if token, _, err = t.src.Token(req.Context()); err != nil {
		return nil, err
	}
	r = req.Clone(req.Context())
	if req.GetBody != nil {
		if r.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	r.Header.Set("Authorization", "token "+token)
	return t.base.RoundTrip(r)
}

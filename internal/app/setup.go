package app

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/github"
)

// SetupOptions configure a Setup: the local half of GitHub's App-manifest flow.
type SetupOptions struct {
	// Listener is where the browser reaches the setup page; it must be on a loopback
	// address (the page carries the flow's state).
	Listener net.Listener
	// Name and PublicURL go into the manifest (see github.ManifestOptions).
	Name      string
	PublicURL string
	// GitHubURL is the web root of GitHub or of a GitHub Enterprise Server ("" for github.com).
	GitHubURL string
	// Org, when set, creates the App under that organization instead of the user.
	Org string
	// Exchange turns the code into the App's credentials; nil calls github.ConvertManifest.
	Exchange func(ctx context.Context, code string) (github.AppCredentials, error)
	// Save stores the credentials before the browser is told the App is ready; its error
	// ends the flow.
	Save      func(ctx context.Context, res SetupResult) error
	Transport http.RoundTripper
	Logger    *slog.Logger
}

// SetupResult is what the flow produced.
type SetupResult struct {
	Credentials github.AppCredentials
	WebURL      string // GitHub's web root
	APIURL      string // GitHub's REST API root
}

// Setup serves the page that posts the manifest to GitHub and the callback GitHub redirects
// the browser to. The callback checks the state it put in the page, exchanges the code once,
// and hands the credentials to Wait's caller.
type Setup struct {
	opts     SetupOptions
	log      *slog.Logger
	state    string
	formURL  string
	manifest []byte
	webURL   string
	apiURL   string
	hosts    map[string]bool
	srv      *http.Server

	mu   sync.Mutex
	used bool
	done chan struct{}
	res  SetupResult
	err  error
}

// Routes of the setup page.
const (
	SetupRoutePage     = "/"
	SetupRouteCallback = "/callback"
)

// NewSetup prepares the manifest and the state; Serve starts answering.
func NewSetup(opts SetupOptions) (*Setup, error) {
	if opts.Listener == nil {
		return nil, errors.New("setup: no listener")
	}
	tcp, ok := opts.Listener.Addr().(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return nil, fmt.Errorf("setup: %s is not a loopback address: the page carries the flow's secret state (reach it from another machine with ssh -L)", opts.Listener.Addr())
	}
	web, api, err := github.GitHubURLs(opts.GitHubURL)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	port := strconv.Itoa(tcp.Port)
	base := "http://" + net.JoinHostPort(tcp.IP.String(), port)
	m, err := github.NewManifest(github.ManifestOptions{Name: opts.Name, PublicURL: opts.PublicURL, RedirectURL: base + SetupRouteCallback})
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	state := randomToken(32)
	form, err := github.NewAppFormURL(web, opts.Org, state)
	if err != nil {
		return nil, err
	}
	s := &Setup{
		opts: opts, log: log, state: state, formURL: form, manifest: raw, webURL: web, apiURL: api,
		hosts: map[string]bool{net.JoinHostPort(tcp.IP.String(), port): true, "localhost:" + port: true},
		done:  make(chan struct{}),
	}
	if s.opts.Exchange == nil {
		s.opts.Exchange = func(ctx context.Context, code string) (github.AppCredentials, error) {
			return github.ConvertManifest(ctx, github.ConvertOptions{APIURL: api, Code: code, Transport: opts.Transport, Logger: log})
		}
	}
	return s, nil
}

// URL is the page to open in a browser.
func (s *Setup) URL() string { return "http://" + s.opts.Listener.Addr().String() + SetupRoutePage }

// Manifest is the manifest the page posts (JSON).
func (s *Setup) Manifest() []byte { return s.manifest }

// Serve answers until the flow finished or ctx ends; it returns the credentials.
func (s *Setup) Serve(ctx context.Context) (SetupResult, error) {
	s.srv = &http.Server{
		Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.opts.Listener) }()
	var err error
	select {
	case <-s.done:
	case <-ctx.Done():
		err = ctx.Err()
	case err = <-errc:
	}
	// Let the success page reach the browser before closing.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(sctx)
	select {
	case <-s.done:
		return s.res, s.err
	default:
	}
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		err = errors.New("setup: server stopped")
	}
	return SetupResult{}, err
}

func (s *Setup) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	// A page on another site that resolves its own name to 127.0.0.1 (DNS rebinding) must
	// not read the state: only our own host names are served.
	if !s.hosts[r.Host] {
		http.Error(w, "unknown host", http.StatusMisdirectedRequest)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case SetupRoutePage:
		s.page(w)
	case SetupRouteCallback:
		s.callback(w, r)
	default:
		http.NotFound(w, r)
	}
}

var setupPage = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Aster: create the GitHub App</title></head>
<body>
<h1>Create Aster's GitHub App</h1>
<p>This page sends Aster's App manifest to GitHub. GitHub shows the App it will create
(the name can be changed there); confirm, and GitHub sends you back here.</p>
<form id="manifest" method="post" action="{{.Action}}">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit">Create the App on GitHub</button>
</form>
<script nonce="{{.Nonce}}">document.getElementById("manifest").submit();</script>
</body></html>
`))

func (s *Setup) page(w http.ResponseWriter) {
	nonce := randomToken(16)
	action, _ := url.Parse(s.formURL)
	w.Header().Set("Content-Security-Policy", fmt.Sprintf("default-src 'none'; script-src 'nonce-%s'; form-action %s://%s",
		nonce, action.Scheme, action.Host))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.mu.Lock()
	used := s.used
	s.mu.Unlock()
	if used {
		w.WriteHeader(http.StatusGone)
		_, _ = fmt.Fprintln(w, "The App has been created; this setup is finished.")
		return
	}
	_ = setupPage.Execute(w, map[string]string{"Action": s.formURL, "Manifest": string(s.manifest), "Nonce": nonce})
}

var setupDone = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Aster: App created</title></head>
<body><h1>{{.Name}} is created</h1>
<p>Aster has stored its key and webhook secret. Now install it on the repositories to review:</p>
<p><a href="{{.Install}}">{{.Install}}</a></p>
<p>You can close this page; the terminal says what to run next.</p></body></html>
`))

func (s *Setup) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	got := q.Get("state")
	if len(got) != len(s.state) || subtle.ConstantTimeCompare([]byte(got), []byte(s.state)) != 1 {
		s.log.Warn("setup callback refused: the state does not match this setup's page")
		http.Error(w, "This answer does not belong to this setup (state mismatch). Start again from the setup page.", http.StatusForbidden)
		return
	}
	code := q.Get("code")
	if !github.ValidManifestCode(code) {
		http.Error(w, "GitHub's answer has no valid code.", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if s.used {
		s.mu.Unlock()
		http.Error(w, "This setup has already exchanged its code.", http.StatusConflict)
		return
	}
	s.used = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	creds, err := s.opts.Exchange(ctx, code)
	if err != nil {
		// The code may be spent; a new one needs a new run of the flow.
		s.finish(SetupResult{}, fmt.Errorf("exchange the manifest code: %w", err))
		http.Error(w, "GitHub did not give the App's credentials: "+err.Error()+". Run aster app setup again.", http.StatusBadGateway)
		return
	}
	res := SetupResult{Credentials: creds, WebURL: s.webURL, APIURL: s.apiURL}
	if s.opts.Save != nil {
		if err := s.opts.Save(ctx, res); err != nil {
			s.finish(SetupResult{}, err)
			http.Error(w, "The App was created on GitHub, but Aster could not store its credentials: "+err.Error()+
				". Delete the App on GitHub and run aster app setup again.", http.StatusInternalServerError)
			return
		}
	}
	s.finish(res, nil)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = setupDone.Execute(w, map[string]string{"Name": creds.Name, "Install": creds.InstallURL()})
}

func (s *Setup) finish(res SetupResult, err error) {
	s.res, s.err = res, err
	close(s.done)
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

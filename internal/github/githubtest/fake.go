// Package githubtest is a fake GitHub for tests: an httptest server that accepts only requests
// that are operations of GitHub's published REST OpenAPI description (@octokit/openapi) with
// bodies valid against their schemas, and GraphQL documents valid against GitHub's published
// GraphQL schema (@octokit/graphql-schema; review threads and resolveReviewThread), serves an App's token exchange, pull requests, diffs,
// tarballs and contents from real git repositories, records what was posted, and injects faults.
package githubtest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// APIPrefix is the path the fake serves the REST API under (as GitHub Enterprise Server does),
// so a client that builds absolute paths instead of resolving against its base URL fails.
const APIPrefix = "/api/v3"

// codeloadPrefix serves archive downloads, outside the API as codeload.github.com is.
const codeloadPrefix = "/_codeload/"

// AppPermissions are the permissions the fake's App was granted, exactly the manifest's.
func AppPermissions() map[string]string {
	return map[string]string{"metadata": "read", "contents": "read", "pull_requests": "write", "checks": "write"}
}

// Options configures New. Zero values pick the defaults.
type Options struct {
	AppID          int64  // default 4242
	AppSlug        string // default "aster-test"
	InstallationID int64  // default 99
	// OnReject is called when the fake refuses a request as not what GitHub would accept
	// (not an operation of the description, a body that fails its schema, a missing or wrong
	// credential, an operation the fake does not implement). Default: t.Errorf.
	OnReject func(format string, args ...any)
	// NoWebhookSecret makes the manifest conversion return no webhook secret (the client must
	// set one through PATCH /app/hook/config).
	NoWebhookSecret bool
}

// Server is the fake GitHub. All methods are safe for concurrent use.
type Server struct {
	t    TB
	srv  *httptest.Server
	spec *Spec
	opts Options

	mu         sync.Mutex
	repos      map[string]*repoState // by "owner/name"
	tokens     map[string]TokenGrant
	codeload   map[string]archiveGrant
	faults     []*Fault
	nextID     int64
	installed  []string // repositories of the installation, "owner/name"
	created    []*CreatedApp
	hookSecret string

	// reqMu guards requests alone: a request is recorded when its answer starts, which a
	// handler may write while it holds mu.
	reqMu    sync.Mutex
	requests []Request
}

// Request is one request the fake received.
type Request struct {
	Method    string
	Path      string // relative to the API root, or the codeload path
	Operation string // operationId, "" when none matched
	Status    int
	Auth      string // "jwt", "token", "none"
}

// TokenGrant is an installation token the fake issued and what it may do.
type TokenGrant struct {
	Token          string
	InstallationID int64
	Repositories   []string // names as requested; empty means every repository of the installation
	Permissions    map[string]string
	ExpiresAt      time.Time
}

type archiveGrant struct {
	repo, sha string
	expires   time.Time
}

// New starts a fake GitHub; it is closed when the test ends. It needs the octokit packages
// (scripts/fetch-test-deps.sh): without them the test is skipped, or failed under CI.
func New(t TB, opts Options) *Server {
	t.Helper()
	RequireData(t)
	spec, err := LoadSpec()
	if err != nil {
		t.Fatalf("githubtest: load OpenAPI description: %v", err)
	}
	if opts.AppID == 0 {
		opts.AppID = 4242
	}
	if opts.AppSlug == "" {
		opts.AppSlug = "aster-test"
	}
	if opts.InstallationID == 0 {
		opts.InstallationID = 99
	}
	if opts.OnReject == nil {
		opts.OnReject = t.Errorf
	}
	s := &Server{
		t: t, spec: spec, opts: opts,
		repos: map[string]*repoState{}, tokens: map[string]TokenGrant{}, codeload: map[string]archiveGrant{},
		nextID: 1000,
	}
	mux := http.NewServeMux()
	mux.HandleFunc(APIPrefix+"/", s.serveAPI)
	mux.HandleFunc(codeloadPrefix, s.serveCodeload)
	mux.HandleFunc(GraphQLPath, s.serveGraphQL)
	mux.HandleFunc("POST /settings/apps/new", s.serveNewApp)
	mux.HandleFunc("POST /organizations/{org}/settings/apps/new", s.serveNewApp)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record(Request{Method: r.Method, Path: r.URL.Path, Status: http.StatusNotFound})
		s.reject(w, http.StatusNotFound, "%s %s is outside %s/: the client ignored its base URL", r.Method, r.URL.Path, APIPrefix)
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API base URL to configure clients with (ends in /api/v3/).
func (s *Server) URL() string { return s.srv.URL + APIPrefix + "/" }

// AppID is the fake App's id.
func (s *Server) AppID() int64 { return s.opts.AppID }

// InstallationID is the fake App's one installation.
func (s *Server) InstallationID() int64 { return s.opts.InstallationID }

// BotLogin is the login the App posts as.
func (s *Server) BotLogin() string { return s.opts.AppSlug + "[bot]" }

// PrivateKeyPEM is the App's private key (generated per test process).
func (s *Server) PrivateKeyPEM() []byte { return pemOf(appKey()) }

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Calls counts the requests received so far for one operation (its OpenAPI operation id,
// e.g. "issues/list-comments").
func (s *Server) Calls(operation string) int {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Operation == operation {
			n++
		}
	}
	return n
}

// Tokens returns every installation token issued so far.
func (s *Server) Tokens() []TokenGrant {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TokenGrant
	for _, g := range s.tokens {
		out = append(out, g)
	}
	return out
}

func (s *Server) record(r Request) {
	s.reqMu.Lock()
	s.requests = append(s.requests, r)
	s.reqMu.Unlock()
}

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

func randomString(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// reject answers like GitHub would and reports the request as a test failure.
func (s *Server) reject(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.opts.OnReject("githubtest: rejected: %s", msg)
	writeError(w, status, msg)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{
		"message":           msg,
		"documentation_url": "https://docs.github.com/rest",
		"status":            fmt.Sprint(status),
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiRequest is one matched API request, passed to the operation's handler.
type apiRequest struct {
	r      *http.Request
	op     *Operation
	params map[string]string
	body   []byte
	grant  TokenGrant // for installation-token requests
	repo   *repoState // for /repos/{owner}/{repo}/... requests
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	rel := strings.TrimPrefix(r.URL.EscapedPath(), APIPrefix)
	rec := Request{Method: r.Method, Path: rel, Auth: "none"}
	sw := &statusWriter{ResponseWriter: w, answered: func(status int) { rec.Status = status; s.record(rec) }}
	defer sw.finish()

	op, params, ok := s.spec.Match(r.Method, rel)
	if !ok {
		s.reject(sw, http.StatusNotFound, "%s %s is not an operation in GitHub's OpenAPI description", r.Method, rel)
		return
	}
	rec.Operation = op.ID
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		s.reject(sw, http.StatusBadRequest, "read body: %v", err)
		return
	}
	if err := s.spec.ValidateBody(op, body); err != nil {
		s.reject(sw, http.StatusUnprocessableEntity, "%s %s: %v", r.Method, rel, err)
		return
	}
	h, ok := handlers[op.ID]
	if !ok {
		s.reject(sw, http.StatusNotImplemented, "the fake does not implement %s (%s %s)", op.ID, op.Method, op.Template)
		return
	}
	if s.fault(sw, op.ID) {
		return
	}
	req := &apiRequest{r: r, op: op, params: params, body: body}
	switch h.auth {
	case authNone:
	case authJWT:
		rec.Auth = "jwt"
		if !s.checkJWT(sw, r) {
			return
		}
	default:
		rec.Auth = "token"
		if !s.checkToken(sw, req, h.perm, h.level) {
			return
		}
	}
	h.fn(s, sw, req)
}

// statusWriter calls answered with the status before the first byte of the answer goes
// out, so a client that has its answer always finds its request recorded (Calls,
// Requests); finish does it for a handler that wrote nothing.
type statusWriter struct {
	http.ResponseWriter
	status   int
	answered func(status int)
}

func (w *statusWriter) WriteHeader(code int) {
	w.answer(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.answer(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) answer(code int) {
	if w.status == 0 {
		w.status = code
		w.answered(code)
	}
}

func (w *statusWriter) finish() { w.answer(http.StatusOK) }

func (s *Server) checkJWT(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		s.reject(w, http.StatusUnauthorized, "%s needs an App JWT (Authorization: Bearer)", r.URL.Path)
		return false
	}
	if err := verifyAppJWT(tok, &appKey().PublicKey, s.opts.AppID, time.Now()); err != nil {
		s.reject(w, http.StatusUnauthorized, "App JWT refused: %v", err)
		return false
	}
	return true
}

// grantOf returns the installation token a request carries ("token T" or "Bearer T"), if
// the fake issued it.
func (s *Server) grantOf(r *http.Request) (TokenGrant, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "token ")
	if !ok {
		tok, ok = strings.CutPrefix(h, "Bearer ")
	}
	s.mu.Lock()
	grant, known := s.tokens[tok]
	s.mu.Unlock()
	return grant, ok && known
}

// checkToken enforces an installation token, its repository scope and its permissions.
func (s *Server) checkToken(w http.ResponseWriter, req *apiRequest, perm, level string) bool {
	grant, ok := s.grantOf(req.r)
	if !ok {
		s.reject(w, http.StatusUnauthorized, "%s %s without a valid installation token", req.op.Method, req.op.Template)
		return false
	}
	if time.Now().After(grant.ExpiresAt) {
		writeError(w, http.StatusUnauthorized, "Bad credentials") // what GitHub says; not a client bug
		return false
	}
	req.grant = grant
	if owner, name := req.params["owner"], req.params["repo"]; owner != "" && name != "" {
		full := owner + "/" + name
		if len(grant.Repositories) > 0 && !containsFold(grant.Repositories, name) {
			writeError(w, http.StatusNotFound, "Not Found") // GitHub hides what a token cannot see
			return false
		}
		s.mu.Lock()
		repo := s.repos[full]
		installed := containsFold(s.installed, full)
		s.mu.Unlock()
		if repo == nil || !installed {
			writeError(w, http.StatusNotFound, "Not Found")
			return false
		}
		req.repo = repo
	}
	if perm != "" && !allows(grant.Permissions[perm], level) {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return false
	}
	return true
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}

func allows(have, want string) bool {
	rank := map[string]int{"": 0, "read": 1, "write": 2, "admin": 3}
	return rank[have] >= rank[want]
}

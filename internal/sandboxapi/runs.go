package sandboxapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/backoff"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/runstore"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/textclip"
)

// Callbacks configure the signed POST of an asynchronous run's result to the
// callback_url its request named.
type Callbacks struct {
	// Allow lists the hosts a callback may go to: "host" (any port) or
	// "host:port", a name or an address. Empty: no callbacks are taken.
	Allow []string
	// Secret keys the HMAC-SHA256 signature of each callback body
	// (api.HeaderSignature). Required when Allow is set.
	Secret []byte
	// Timeout bounds one delivery attempt (default DefaultCallbackTimeout);
	// Attempts is how many are made (default DefaultCallbackAttempts).
	Timeout  time.Duration
	Attempts int
}

// Defaults of the callbacks.
const (
	DefaultCallbackTimeout  = 10 * time.Second
	DefaultCallbackAttempts = 4
	// MaxCallbackURLBytes bounds a callback_url.
	MaxCallbackURLBytes = 2048
)

// reqState is what a request's handlers leave for ServeHTTP to do when they
// return: release the body's admission and spool. An asynchronous run takes
// them over (detached) and releases them when its run ends.
type reqState struct {
	// received is when the request arrived (the start of a run's admission phase).
	received time.Time
	async    *asyncSubmit
	release  []func()
	detached bool
}

type asyncSubmit struct {
	kind     string
	callback string
	owner    string
}

type reqStateKey struct{}

func stateOf(r *http.Request) *reqState {
	if q, ok := r.Context().Value(reqStateKey{}).(*reqState); ok {
		return q
	}
	return &reqState{}
}

// onDone adds f to what is released when the request (or its detached run)
// ends, in reverse order.
func (q *reqState) onDone(f func()) { q.release = append(q.release, f) }

func (q *reqState) finish() {
	for i := len(q.release) - 1; i >= 0; i-- {
		q.release[i]()
	}
	q.release = nil
}

// runs serves /v1/runs: POST submits, GET lists.
func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	if s.opts.Runs == nil {
		s.writeError(w, r, fmt.Errorf("%w: this server keeps no asynchronous runs (start it with a runs database: --runs-db)", api.ErrNotFound))
		return
	}
	if r.Method != http.MethodPost {
		limit := 50
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > runstore.MaxList {
				s.writeError(w, r, sandbox.Invalidf("limit %q: want a number from 1 to %d", textclip.Head(v, 32, "…"), runstore.MaxList))
				return
			}
			limit = n
		}
		list, err := s.opts.Runs.List(r.Context(), s.owner(r), limit)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out := api.RunList{Runs: []api.Run{}}
		for _, run := range list {
			out.Runs = append(out.Runs, wireRun(run))
		}
		s.writeJSON(w, http.StatusOK, out)
		return
	}
	q := r.URL.Query()
	sub := &asyncSubmit{kind: q.Get("kind"), callback: q.Get("callback_url"), owner: s.owner(r)}
	if sub.kind == "" {
		sub.kind = api.RunKindExecute
	}
	if sub.callback != "" {
		if err := s.checkCallback(sub.callback); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	stateOf(r).async = sub
	switch sub.kind {
	case api.RunKindExecute:
		s.execute(w, r)
	case api.RunKindTest:
		s.test(w, r)
	default:
		s.writeError(w, r, sandbox.Invalidf("kind %q: want %s or %s", textclip.Head(sub.kind, 32, "…"), api.RunKindExecute, api.RunKindTest))
	}
}

// run serves GET /v1/runs/{id}.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	if s.opts.Runs == nil {
		s.writeError(w, r, fmt.Errorf("%w: this server keeps no asynchronous runs (start it with a runs database: --runs-db)", api.ErrNotFound))
		return
	}
	id := strings.TrimPrefix(r.URL.Path, api.RouteRunPrefix)
	run, err := s.opts.Runs.Get(r.Context(), s.owner(r), id)
	if errors.Is(err, runstore.ErrNotFound) {
		s.writeError(w, r, fmt.Errorf("%w: no run %s of this token", api.ErrNotFound, clipPath(id)))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, wireRun(run))
}

func wireRun(r runstore.Run) api.Run {
	out := api.Run{ID: r.ID, Kind: r.Kind, State: string(r.State), Result: r.Result, CallbackURL: r.CallbackURL, CreatedAt: r.Created.UTC()}
	if r.ErrorCode != "" || r.ErrorMessage != "" {
		out.Error = &api.ErrorDetail{Code: r.ErrorCode, Message: r.ErrorMessage}
	}
	if !r.Started.IsZero() {
		t := r.Started.UTC()
		out.StartedAt = &t
	}
	if !r.Finished.IsZero() {
		t := r.Finished.UTC()
		out.FinishedAt = &t
	}
	return out
}

// owner names who a request acts for, for its runs and sessions: a hash of
// its bearer token (never the token), or "" on a server without tokens
// (loopback callers only, one owner).
func (s *Server) owner(r *http.Request) string {
	if s.opts.Tokens == nil {
		return ""
	}
	_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return "token-" + hex.EncodeToString(sum[:12])
}

// detach answers an asynchronous submission 202 and runs exec in the
// background, under the server's lifetime instead of the request's; the
// request's resources are released when the run ends.
func (s *Server) detach(w http.ResponseWriter, r *http.Request, q *reqState, id string, exec func(ctx context.Context, st *streamer) (sandbox.Result, error), body func(sandbox.Result) any) {
	now := time.Now()
	run := runstore.Run{ID: id, Owner: q.async.owner, Kind: q.async.kind, CallbackURL: q.async.callback, Created: now}
	if err := s.opts.Runs.Create(r.Context(), run); err != nil {
		s.writeError(w, r, err)
		return
	}
	q.detached = true
	s.background.Add(1)
	ctx := s.baseContext()
	go func() {
		defer s.background.Done()
		defer q.finish()
		s.finishRun(ctx, run, exec, body)
	}()
	w.Header().Set(api.HeaderRunID, id)
	w.Header().Set("Location", api.RouteRunPrefix+id)
	run.State = runstore.StateQueued
	s.writeJSON(w, http.StatusAccepted, wireRun(run))
}

// finishRun runs one detached run to its end and records it, then delivers
// its callback.
func (s *Server) finishRun(ctx context.Context, run runstore.Run, exec func(ctx context.Context, st *streamer) (sandbox.Result, error), body func(sandbox.Result) any) {
	// The store is written with a context of its own: a run cancelled by a
	// shutdown is still recorded as ended.
	store := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	}
	sctx, cancel := store()
	if err := s.opts.Runs.Start(sctx, run.ID, time.Now()); err != nil {
		s.log.Warn("record run start", "run", run.ID, "err", err)
	}
	cancel()
	res, err := exec(ctx, nil)
	err = s.reclassify(err)
	status, code := StatusFor(err)
	run.Finished = time.Now()
	switch {
	case err != nil && status != http.StatusInternalServerError:
		run.State, run.ErrorCode, run.ErrorMessage = runstore.StateError, code, err.Error()
	default:
		if err != nil {
			s.log.Warn("run failed", "run", run.ID, "err", err)
		}
		b, merr := json.Marshal(body(res))
		if merr != nil {
			run.State, run.ErrorCode, run.ErrorMessage = runstore.StateError, api.CodeInternal, "the result could not be encoded"
		} else {
			run.State, run.Result = runstore.StateDone, b
		}
	}
	sctx, cancel = store()
	defer cancel()
	if err := s.opts.Runs.Finish(sctx, run); err != nil {
		s.log.Error("record run result", "run", run.ID, "err", err)
	}
	s.log.Info("async run finished", "run", run.ID, "kind", run.Kind, "state", run.State)
	if run.CallbackURL != "" {
		s.deliver(ctx, run)
	}
}

// checkCallback refuses a callback_url this server would not call: not
// http(s), credentials in it, or a host off the operator's allow list.
func (s *Server) checkCallback(raw string) error {
	cb := s.opts.Callbacks
	if len(cb.Allow) == 0 {
		return sandbox.Invalidf("callback_url: this server takes no callbacks (the operator allows none: --callback-allow)")
	}
	if len(raw) > MaxCallbackURLBytes {
		return sandbox.Invalidf("callback_url: longer than %d bytes", MaxCallbackURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return sandbox.Invalidf("callback_url %s: want an absolute http or https URL", clipPath(raw))
	}
	if u.User != nil {
		return sandbox.Invalidf("callback_url: credentials in the URL are not taken")
	}
	if !callbackAllowed(cb.Allow, u) {
		return sandbox.Invalidf("callback_url: host %s is not on this server's callback allow list (%s)", clipPath(u.Host), strings.Join(cb.Allow, ", "))
	}
	return nil
}

// callbackAllowed reports whether u's host (and port) is on allow.
func callbackAllowed(allow []string, u *url.URL) bool {
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSpace(a))
		h, p, err := net.SplitHostPort(a)
		if err != nil {
			h, p = strings.Trim(a, "[]"), ""
		}
		if strings.TrimSuffix(h, ".") == host && (p == "" || p == port) {
			return true
		}
	}
	return false
}

// callbackClient dials only what the allow list names, and never a
// link-local or cloud metadata address whatever a name resolves to; it
// follows no redirect.
func (s *Server) callbackClient() *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("callback: dial %s: %w", address, err)
		}
		if why := egress.NeverAdmitted(ap.Addr()); why != "" {
			return fmt.Errorf("callback: %s is a %s address, never called", ap.Addr(), why)
		}
		return nil
	}}
	return &http.Client{
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, TLSHandshakeTimeout: 5 * time.Second,
			ResponseHeaderTimeout: s.callbackTimeout(), MaxResponseHeaderBytes: 16 << 10},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       s.callbackTimeout(),
	}
}

func (s *Server) callbackTimeout() time.Duration {
	if s.opts.Callbacks.Timeout > 0 {
		return s.opts.Callbacks.Timeout
	}
	return DefaultCallbackTimeout
}

// Sign is the value of api.HeaderSignature for body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// deliver POSTs the run (as GET /v1/runs/{id} would answer it) to its
// callback_url, signed, retrying a failed attempt or a 5xx/429 answer with
// backoff. The outcome is logged, never the body.
func (s *Server) deliver(ctx context.Context, run runstore.Run) {
	body, err := json.Marshal(wireRun(run))
	if err != nil {
		return
	}
	attempts := s.opts.Callbacks.Attempts
	if attempts <= 0 {
		attempts = DefaultCallbackAttempts
	}
	client := s.callbackClient()
	for n := 0; n < attempts; n++ {
		if n > 0 {
			if backoff.Sleep(ctx, backoff.Delay(n, time.Second, 30*time.Second, nil)) != nil {
				return
			}
		}
		status, err := s.postCallback(ctx, client, run.CallbackURL, body)
		if err == nil && status < 300 {
			s.log.Info("callback delivered", "run", run.ID, "status", status, "attempt", n+1)
			return
		}
		s.log.Warn("callback failed", "run", run.ID, "status", status, "attempt", n+1, "err", err)
		if err == nil && status < 500 && status != http.StatusTooManyRequests {
			return // the receiver refused it: a retry would be refused too
		}
	}
}

func (s *Server) postCallback(ctx context.Context, client *http.Client, target string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	req.Header.Set("User-Agent", "aster-callback")
	req.Header.Set(api.HeaderSignature, Sign(s.opts.Callbacks.Secret, body))
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// baseContext is what detached runs run under: Serve's, cancelled when its
// shutdown grace is over (the background when the Server is used as a bare
// handler).
func (s *Server) baseContext() context.Context {
	s.baseMu.Lock()
	defer s.baseMu.Unlock()
	if s.base == nil {
		return context.Background()
	}
	return s.base
}

func (s *Server) setBaseContext(ctx context.Context) {
	s.baseMu.Lock()
	s.base = ctx
	s.baseMu.Unlock()
}

// waitBackground waits for the detached runs until ctx ends.
func (s *Server) waitBackground(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.background.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package gitea

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/backoff"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/textclip"
)

// Defaults of the Gitea client.
const (
	// DefaultRetryAttempts is how many tries one idempotent operation gets, the first included.
	DefaultRetryAttempts = 4
	// DefaultRetryBase is the first backoff; it doubles each try up to DefaultRetryMax.
	DefaultRetryBase = 500 * time.Millisecond
	DefaultRetryMax  = 10 * time.Second
	// DefaultTimeout bounds one request (an archive download gets DefaultArchiveTimeout).
	DefaultTimeout        = 60 * time.Second
	DefaultArchiveTimeout = 10 * time.Minute
	// maxJSONBytes caps a JSON answer; maxErrorBytes the message read from an error answer.
	maxJSONBytes  = 32 << 20
	maxErrorBytes = 4 << 10
	// pageSize is the page size of listings (Gitea's default maximum is 50).
	pageSize = 50
	// maxPages bounds every listing.
	maxPages = 200
)

// Options configure a Forge.
type Options struct {
	// URL is the Gitea root (https://gitea.example.com/, or with a sub-path); the API is
	// URL + "api/v1/".
	URL string
	// Token is the bot account's access token.
	Token []byte
	// HTTPClient is used for every request (nil: a client without a global timeout;
	// each request has its own).
	HTTPClient *http.Client
	// RetryAttempts, RetryBase, RetryMax: 0 takes the defaults.
	RetryAttempts       int
	RetryBase, RetryMax time.Duration
	Logger              *slog.Logger
}

// Forge is one Gitea as one bot account. Safe for concurrent use.
type Forge struct {
	api   *url.URL // .../api/v1/
	token string
	http  *http.Client
	opts  Options
	log   *slog.Logger

	mu  sync.Mutex
	bot string // the bot's login, once read
}

// New checks opts and returns the Forge. It makes no request.
func New(opts Options) (*Forge, error) {
	u, err := url.Parse(strings.TrimSpace(opts.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// The URL is not echoed: a mistaken one may carry a password.
		return nil, errors.New("gitea: the URL is not an http(s) root without credentials or query (example: https://gitea.example.com/)")
	}
	tok := strings.TrimSpace(string(opts.Token))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return nil, errors.New("gitea: the bot token is empty or has blanks inside (the token file must hold just the token)")
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u = u.JoinPath("api", "v1")
	u.Path += "/"
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	// Redirects are not followed with the token: Go drops Authorization on a redirect to
	// another host, and an API answer has no business redirecting.
	hc := *opts.HTTPClient
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if opts.RetryAttempts <= 0 {
		opts.RetryAttempts = DefaultRetryAttempts
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = DefaultRetryBase
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = DefaultRetryMax
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Forge{api: u, token: tok, http: &hc, opts: opts, log: log}, nil
}

// APIURL is the API root the Forge talks to (no credentials in it).
func (f *Forge) APIURL() string { return f.api.String() }

// Repo returns a client scoped to owner/repo.
func (f *Forge) Repo(owner, repo string) (*Client, error) {
	if !validName(owner) || !validName(repo) {
		return nil, &APIError{Op: "repository", class: github.ErrInvalid, Message: "owner or name is not a Gitea name"}
	}
	return &Client{f: f, owner: owner, repo: repo}, nil
}

// BotLogin is the login of the token's account: only its comments count as Aster's.
func (f *Forge) BotLogin(ctx context.Context) (string, error) {
	f.mu.Lock()
	bot := f.bot
	f.mu.Unlock()
	if bot != "" {
		return bot, nil
	}
	var u wireUser
	if err := f.doJSON(ctx, "get bot account", http.MethodGet, "user", nil, &u, true); err != nil {
		return "", err
	}
	if !validName(u.Login) {
		return "", &APIError{Op: "get bot account", class: github.ErrInvalid, Message: "no login in the answer"}
	}
	f.mu.Lock()
	f.bot = u.Login
	f.mu.Unlock()
	return u.Login, nil
}

// Client is the REST API as the bot account, limited to one repository by construction
// (every path is built from its owner and name). Safe for concurrent use.
type Client struct {
	f     *Forge
	owner string
	repo  string
}

// Repo returns the owner and name the client is scoped to.
func (c *Client) Repo() (owner, name string) { return c.owner, c.repo }

// path is the API path of the client's repository followed by parts, each escaped.
func (c *Client) path(parts ...string) string {
	p := "repos/" + url.PathEscape(c.owner) + "/" + url.PathEscape(c.repo)
	for _, s := range parts {
		p += "/" + url.PathEscape(s)
	}
	return p
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// validName accepts Gitea user, organisation and repository names.
func validName(s string) bool { return namePattern.MatchString(s) && s != "." && s != ".." }

// APIError is a classified failure of one Gitea API operation. It wraps exactly one of
// internal/github's classes (github.ErrNotFound, ErrForbidden, ...), so the App treats a
// Gitea failure as it treats GitHub's. Its message carries the operation, the status and
// Gitea's message, never a token.
type APIError struct {
	Op      string
	Status  int
	Message string
	class   error
}

func (e *APIError) Error() string {
	msg := "gitea " + e.Op + ": " + e.class.Error()
	if e.Status != 0 {
		msg += fmt.Sprintf(" (%d)", e.Status)
	}
	if e.Message != "" {
		msg += ": " + safetext.RedactShapes(e.Message)
	}
	return msg
}

// Unwrap exposes the class, for errors.Is.
func (e *APIError) Unwrap() error { return e.class }

// classify maps an HTTP status to a class: the one place that does.
func classify(status int) error {
	switch {
	case status == http.StatusNotFound || status == http.StatusGone:
		return github.ErrNotFound
	case status == http.StatusUnauthorized:
		return github.ErrUnauthorized
	case status == http.StatusForbidden:
		return github.ErrForbidden
	case status == http.StatusTooManyRequests:
		return github.ErrRateLimited
	case status >= 500:
		return github.ErrUnavailable
	default:
		return github.ErrInvalid
	}
}

// errorOf reads Gitea's error answer ({"message": ...}) into an APIError.
func errorOf(op string, resp *http.Response) *APIError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	var w struct {
		Message string `json:"message"`
	}
	msg := ""
	if json.Unmarshal(b, &w) == nil {
		msg = w.Message
	}
	return &APIError{Op: op, Status: resp.StatusCode, Message: textclip.OneLine(msg, 300), class: classify(resp.StatusCode)}
}

// retryable reports whether a failed try may be repeated.
func retryable(err error) bool {
	return errors.Is(err, github.ErrUnavailable) || errors.Is(err, github.ErrRateLimited)
}

// request is one API call: method, path under the API root, query, JSON body.
type request struct {
	op, method, path string
	query            url.Values
	body             any
	accept           string
	// idempotent requests are repeated on a 5xx or a transport failure; a create is not
	// (Gitea may have stored it): the caller's retry finds it by its marker instead.
	idempotent bool
	timeout    time.Duration
}

// do sends r, retrying as allowed, and hands a 2xx answer to read (which must not keep
// the body). Any other answer becomes an *APIError.
func (f *Forge) do(ctx context.Context, r request, read func(*http.Response) error) error {
	var payload []byte
	if r.body != nil {
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("gitea %s: %w", r.op, err)
		}
	}
	// r.path is built of escaped segments (Client.path), so it is appended as it is.
	u := f.api.String() + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	attempts := 1
	if r.idempotent {
		attempts = f.opts.RetryAttempts
	}
	timeout := r.timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var last error
	for try := range attempts {
		if try > 0 {
			d := backoff.Delay(try-1, f.opts.RetryBase, f.opts.RetryMax, rand.Float64)
			if err := backoff.Sleep(ctx, d); err != nil {
				return last
			}
		}
		last = f.once(ctx, r, u, payload, timeout, read)
		if last == nil || !retryable(last) {
			return last
		}
		f.log.Warn("gitea request failed; retrying", "op", r.op, "try", try+1, "err", last)
	}
	return last
}

func (f *Forge) once(ctx context.Context, r request, u string, payload []byte, timeout time.Duration, read func(*http.Response) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return &APIError{Op: r.op, Message: "bad request", class: github.ErrInvalid}
	}
	req.Header.Set("Authorization", "token "+f.token)
	req.Header.Set("Accept", cmpOr(r.accept, "application/json"))
	req.Header.Set("User-Agent", "aster")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.http.Do(req)
	if err != nil {
		// The URL holds no secret, but a transport error is still only named, never echoed
		// with what a proxy may have added.
		return &APIError{Op: r.op, Message: transportMessage(err), class: github.ErrUnavailable}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errorOf(r.op, resp)
	}
	if read == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBytes))
		return nil
	}
	return read(resp)
}

func transportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return textclip.OneLine(safetext.RedactShapes(err.Error()), 200)
}

// doJSON sends a JSON request and decodes a JSON answer into out (nil: ignore it).
func (f *Forge) doJSON(ctx context.Context, op, method, path string, body, out any, idempotent bool) error {
	return f.do(ctx, request{op: op, method: method, path: path, body: body, idempotent: idempotent}, func(resp *http.Response) error {
		if out == nil {
			return nil
		}
		dec := json.NewDecoder(io.LimitReader(resp.Body, maxJSONBytes))
		if err := dec.Decode(out); err != nil {
			return &APIError{Op: op, Status: resp.StatusCode, Message: "answer is not the expected JSON", class: github.ErrInvalid}
		}
		return nil
	})
}

// listAll pages through a listing (page, limit) until a short page.
func listAll[T any](ctx context.Context, f *Forge, op, path string, query url.Values) ([]T, error) {
	var all []T
	for page := 1; page <= maxPages; page++ {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		q.Set("page", fmt.Sprint(page))
		q.Set("limit", fmt.Sprint(pageSize))
		var items []T
		err := f.do(ctx, request{op: op, method: http.MethodGet, path: path, query: q, idempotent: true}, func(resp *http.Response) error {
			if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSONBytes)).Decode(&items); err != nil {
				return &APIError{Op: op, Status: resp.StatusCode, Message: "answer is not the expected JSON", class: github.ErrInvalid}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if len(items) < pageSize {
			return all, nil
		}
	}
	f.log.Warn("gitea listing cut at the page cap", "op", op, "pages", maxPages)
	return all, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

type wireUser struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
}

// decodeCapped decodes a JSON answer of at most maxJSONBytes into out.
func decodeCapped(resp *http.Response, op string, out any) error {
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSONBytes)).Decode(out); err != nil {
		return &APIError{Op: op, Status: resp.StatusCode, Message: "answer is not the expected JSON", class: github.ErrInvalid}
	}
	return nil
}

var shaPattern = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

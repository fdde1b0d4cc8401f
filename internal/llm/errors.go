package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/backoff"
	"github.com/asterhq/aster/internal/safetext"
)

// Kind classifies a model error by what the caller should do about it.
type Kind string

// Error kinds.
const (
	// KindRateLimited: 429; retried after Retry-After or backoff.
	KindRateLimited Kind = "rate_limited"
	// KindUnavailable: 5xx, 529 overloaded, connection failures; retried.
	KindUnavailable Kind = "unavailable"
	// KindTimeout: one attempt passed the per-call timeout; retried.
	KindTimeout Kind = "timeout"
	// KindAuth: 401/403; not retried.
	KindAuth Kind = "auth"
	// KindBadRequest: 400/404/413/422 and other 4xx; not retried.
	KindBadRequest Kind = "bad_request"
	// KindBadResponse: a 2xx body that is not the wire format, or too large.
	KindBadResponse Kind = "bad_response"
	// KindCallCap: the review's call cap is used up; nothing was sent.
	KindCallCap Kind = "call_cap"
	// KindBudget: the review's token or cost cap would be passed; nothing was sent.
	KindBudget Kind = "budget"
	// KindCanceled: the caller's context ended.
	KindCanceled Kind = "canceled"
	// KindConfig: the provider is misconfigured.
	KindConfig Kind = "config"
)

// Error is every error this package returns. Its message never holds the API
// key, request bodies or response bodies beyond a short, scrubbed excerpt.
type Error struct {
	Kind     Kind
	Provider string
	// Status is the HTTP status, when there was one.
	Status int
	// RetryAfter is the server's requested wait, when it sent one.
	RetryAfter time.Duration
	// Attempts made before giving up (set by the Client).
	Attempts      int
	hasRetryAfter bool
	msg           string
	cause         error // only context errors, so errors.Is works; never SDK errors
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString(string(e.Kind))
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.msg != "" {
		b.WriteString(": ")
		b.WriteString(e.msg)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	return b.String()
}

// Unwrap exposes context errors only.
func (e *Error) Unwrap() error { return e.cause }

// Is makes errors.Is(err, ErrRateLimited) and friends work.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.msg == "" && t.Status == 0 && t.Kind == e.Kind
}

// Sentinels for errors.Is.
var (
	ErrRateLimited = &Error{Kind: KindRateLimited}
	ErrUnavailable = &Error{Kind: KindUnavailable}
	ErrTimeout     = &Error{Kind: KindTimeout}
	ErrAuth        = &Error{Kind: KindAuth}
	ErrBadRequest  = &Error{Kind: KindBadRequest}
	ErrBadResponse = &Error{Kind: KindBadResponse}
	ErrCallCap     = &Error{Kind: KindCallCap}
	ErrBudget      = &Error{Kind: KindBudget}
	ErrCanceled    = &Error{Kind: KindCanceled}
	ErrConfig      = &Error{Kind: KindConfig}
)

// Retryable reports whether another attempt may succeed.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindRateLimited, KindUnavailable, KindTimeout:
		return true
	}
	return false
}

// KindOf returns err's Kind, or "" when err is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// kindForStatus maps an HTTP status to a Kind.
func kindForStatus(status int) Kind {
	switch {
	case status == 429:
		return KindRateLimited
	case status == 408:
		return KindTimeout
	case status == 401 || status == 403:
		return KindAuth
	case status >= 500:
		return KindUnavailable
	case status >= 400:
		return KindBadRequest
	}
	return KindBadResponse
}

// statusError classifies an error answer of the API: by its status, with the
// wait the server asked for (when it answered at all) and a short, scrubbed
// excerpt of its message.
func statusError(provider string, scrub *safetext.Redactor, status int, res *http.Response, message string) *Error {
	e := &Error{Kind: kindForStatus(status), Provider: provider, Status: status}
	if res != nil {
		e.RetryAfter, e.hasRetryAfter = backoff.RetryAfter(res.Header, time.Now())
	}
	e.msg = excerpt(scrub.RedactString(message), 300)
	return e
}

// excerpt keeps error text short and on one line: provider messages can echo request
// content.
func excerpt(s string, n int) string {
	s = strings.TrimSpace(s)
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return safetext.Clip(s, n)
}

package github

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/asterhq/aster/internal/safetext"
)

// Webhook error classes. WebhookStatus maps them to HTTP statuses.
var (
	// ErrBadSignature: the X-Hub-Signature-256 header is missing, not sha256, malformed or wrong.
	ErrBadSignature = errors.New("bad webhook signature")
	// ErrBodyTooLarge: the webhook body is larger than the configured cap.
	ErrBodyTooLarge = errors.New("webhook body too large")
	// ErrMalformedPayload: a signed body that is not the JSON shape GitHub sends for its event.
	ErrMalformedPayload = errors.New("malformed webhook payload")
	// ErrDuplicateDelivery is returned by a Sink for an X-GitHub-Delivery it has already stored;
	// the handler answers 200 and does nothing else.
	ErrDuplicateDelivery = errors.New("duplicate delivery")
	// ErrDuplicateCommand is returned by a Sink for a review command (a comment id at one edit
	// time) it has already stored, whatever the delivery id: a replayed body is answered 200
	// and runs nothing.
	ErrDuplicateCommand = errors.New("review command already handled")
	// ErrBusy: the body does not fit the server's budget of webhook bytes in flight (429 with
	// Retry-After); nothing was read.
	ErrBusy = errors.New("too many webhook bytes in flight")
	// ErrBodyTimeout: the body did not arrive within the read deadline (408).
	ErrBodyTimeout = errors.New("webhook body too slow")
)

// API error classes. Every error a Client method returns for a GitHub answer wraps exactly one of
// them (check with errors.Is) inside an *APIError.
var (
	// ErrNotFound: 404, or 410. Reported, never retried.
	ErrNotFound = errors.New("not found")
	// ErrForbidden: 403 without rate-limit signals (missing permission, blocked). Never retried.
	ErrForbidden = errors.New("forbidden")
	// ErrUnauthorized: 401, the App JWT or installation token was refused.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrRateLimited: primary or secondary rate limit that outlasted the retry budget.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: 5xx or a transport failure that outlasted the retry budget.
	ErrUnavailable = errors.New("unavailable")
	// ErrInvalid: 422 and other 4xx: GitHub refused what we sent.
	ErrInvalid = errors.New("rejected by github")
	// ErrTooLarge: a response past our cap, or GitHub's 406 for a diff it will not render.
	ErrTooLarge = errors.New("too large")
)

// APIError is a classified failure of one GitHub API operation. Its message carries the
// operation, the status and GitHub's own message, never a URL query, token or key.
type APIError struct {
	Op         string        // our operation name, e.g. "create review"
	Status     int           // HTTP status, 0 for transport failures
	Message    string        // GitHub's message (or the transport error, redacted)
	RetryAfter time.Duration // for ErrRateLimited: how long GitHub asked us to wait
	class      error
	cause      error
}

func (e *APIError) Error() string {
	msg := "github " + e.Op + ": " + e.class.Error()
	if e.Status != 0 {
		msg += fmt.Sprintf(" (%d)", e.Status)
	}
	if e.Message != "" {
		msg += ": " + safetext.RedactShapes(e.Message)
	}
	return msg
}

// Unwrap exposes the class (for errors.Is) and the underlying go-github error (for errors.As).
func (e *APIError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.class}
	}
	return []error{e.class, e.cause}
}

// WebhookStatus is the single place that maps an error from the webhook path to an HTTP status.
func WebhookStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusAccepted
	case errors.Is(err, ErrDuplicateDelivery), errors.Is(err, ErrDuplicateCommand):
		return http.StatusOK
	case errors.Is(err, ErrBusy):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrBodyTimeout):
		return http.StatusRequestTimeout
	case errors.Is(err, ErrBodyTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrBadSignature):
		return http.StatusUnauthorized
	case errors.Is(err, ErrMalformedPayload):
		return http.StatusBadRequest
	default:
		// The sink could not store the job: GitHub redelivers on 5xx only by hand, but a
		// non-2xx shows up red in the App's delivery log, which is what an operator needs.
		return http.StatusServiceUnavailable
	}
}

package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	gh "github.com/google/go-github/v81/github"

	"github.com/asterhq/aster/internal/backoff"
	"github.com/asterhq/aster/internal/safetext"
)

// RetryPolicy bounds how a Client retries rate limits, 5xx and transport failures.
type RetryPolicy struct {
	MaxAttempts      int           // tries per operation, including the first; default DefaultRetryAttempts
	BaseDelay        time.Duration // first backoff; doubles each try, with jitter; default DefaultRetryBase
	MaxDelay         time.Duration // cap of one backoff; default DefaultRetryMax
	MaxRateLimitWait time.Duration // a rate-limit wait longer than this is returned, not slept; default DefaultMaxRateLimitWait
}

// DefaultRetryPolicy returns the policy a zero RetryPolicy means.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: DefaultRetryAttempts, BaseDelay: DefaultRetryBase,
		MaxDelay: DefaultRetryMax, MaxRateLimitWait: DefaultMaxRateLimitWait}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MaxAttempts > 0 {
		d.MaxAttempts = p.MaxAttempts
	}
	if p.BaseDelay > 0 {
		d.BaseDelay = p.BaseDelay
	}
	if p.MaxDelay > 0 {
		d.MaxDelay = p.MaxDelay
	}
	if p.MaxRateLimitWait > 0 {
		d.MaxRateLimitWait = p.MaxRateLimitWait
	}
	return d
}

// retrier runs one API operation with the policy. It is shared by App and Client.
type retrier struct {
	policy RetryPolicy
	log    *slog.Logger
	sleep  func(context.Context, time.Duration) error
}

// do calls fn until it succeeds, fails in a way that is not worth retrying, or the policy is
// spent. Every error it returns is an *APIError or the context's error.
func (r *retrier) do(ctx context.Context, op string, fn func(context.Context) (*gh.Response, error)) error {
	return r.run(ctx, op, true, fn)
}

// doCreate is do for a request that must not be applied twice (a review, a comment): a rate
// limit means GitHub refused it and it is retried, but a 5xx or a broken connection may come
// after GitHub applied it, so that is returned (ErrUnavailable) for the job to retry; the job's
// next run finds what landed by its fingerprints or marker and does not post it again.
func (r *retrier) doCreate(ctx context.Context, op string, fn func(context.Context) (*gh.Response, error)) error {
	return r.run(ctx, op, false, fn)
}

// call makes one request that answers one item, converted by conv, through the retrier: as
// do when repeatable, else as doCreate.
func call[T, U any](ctx context.Context, c *Client, op string, repeatable bool,
	fn func(context.Context) (T, *gh.Response, error), conv func(T) U) (U, error) {
	var item T
	err := c.retry.run(ctx, op, repeatable, func(ctx context.Context) (resp *gh.Response, err error) {
		item, resp, err = fn(ctx)
		return resp, err
	})
	if err != nil {
		var zero U
		return zero, err
	}
	return conv(item), nil
}

func (r *retrier) run(ctx context.Context, op string, repeatable bool, fn func(context.Context) (*gh.Response, error)) error {
	for attempt := 1; ; attempt++ {
		resp, err := fn(ctx)
		if err == nil {
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("github %s: %w", op, ctxErr)
		}
		apiErr, retry := classify(op, resp, err)
		if !repeatable && !errors.Is(apiErr, ErrRateLimited) {
			retry = false
		}
		if !retry || attempt >= r.policy.MaxAttempts {
			return apiErr
		}
		wait := backoff.Delay(attempt-1, r.policy.BaseDelay, r.policy.MaxDelay, nil)
		if apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > r.policy.MaxRateLimitWait {
				return apiErr
			}
			wait = apiErr.RetryAfter
		}
		r.log.Warn("github retry", "op", op, "status", apiErr.Status, "class", apiErr.class.Error(),
			"attempt", attempt, "wait", wait)
		if err := r.sleep(ctx, wait); err != nil {
			return fmt.Errorf("github %s: %w", op, err)
		}
	}
}

// classify is the one place that turns a go-github failure into an error class and decides
// whether it is worth another try.
func classify(op string, resp *gh.Response, err error) (*APIError, bool) {
	var inner *APIError // the token exchange failed inside the transport; it was retried there
	if errors.As(err, &inner) {
		return &APIError{Op: op + ": " + inner.Op, Status: inner.Status, Message: inner.Message,
			RetryAfter: inner.RetryAfter, class: inner.class, cause: inner.cause}, false
	}
	e := &APIError{Op: op, cause: err}
	if resp != nil && resp.Response != nil {
		e.Status = resp.StatusCode
	}
	var (
		rateErr   *gh.RateLimitError
		abuseErr  *gh.AbuseRateLimitError
		respErr   *gh.ErrorResponse
		acceptErr *gh.AcceptedError
		urlErr    *url.Error
	)
	switch {
	case errors.As(err, &rateErr):
		e.class, e.Message = ErrRateLimited, rateErr.Message
		e.Status = statusOf(rateErr.Response, e.Status)
		e.RetryAfter = max(time.Until(rateErr.Rate.Reset.Time), time.Second)
		return e, true
	case errors.As(err, &abuseErr):
		e.class, e.Message = ErrRateLimited, abuseErr.Message
		e.Status = statusOf(abuseErr.Response, e.Status)
		switch {
		case abuseErr.RetryAfter == nil:
			e.RetryAfter = time.Minute // GitHub: without a hint, wait at least a minute
		case *abuseErr.RetryAfter <= 0:
			e.RetryAfter = time.Millisecond // retry at once, but still as a rate-limit wait
		default:
			e.RetryAfter = *abuseErr.RetryAfter
		}
		return e, true
	case errors.As(err, &respErr):
		e.Message = respErr.Message
		for _, d := range respErr.Errors {
			if d.Message != "" {
				e.Message += "; " + d.Message
			} else if d.Field != "" {
				e.Message += "; " + d.Field + " " + d.Code
			}
		}
		e.Status = statusOf(respErr.Response, e.Status)
		var h http.Header
		if respErr.Response != nil {
			h = respErr.Response.Header
		}
		return e, classifyStatus(e, h)
	case errors.As(err, &acceptErr):
		e.class, e.Message, e.Status = ErrUnavailable, "accepted, still processing", http.StatusAccepted
		return e, true
	case errors.As(err, &urlErr):
		e.class, e.Message = ErrUnavailable, urlErr.Op+" "+redactURL(urlErr.URL)+": "+safetext.RedactShapes(urlErr.Err.Error())
		e.cause = nil // its URL may carry a query token
		return e, true
	default:
		e.class, e.Message = ErrUnavailable, safetext.RedactShapes(err.Error())
		e.cause = nil
		return e, false
	}
}

// classifyStatus sets e's class from an HTTP status (and rate-limit headers) and says whether
// to retry.
func classifyStatus(e *APIError, h http.Header) bool {
	rateLimited := h.Get("Retry-After") != "" || h.Get("X-RateLimit-Remaining") == "0"
	switch {
	case e.Status == http.StatusTooManyRequests || (e.Status == http.StatusForbidden && rateLimited):
		e.class = ErrRateLimited
		e.RetryAfter = retryAfter(h)
		return true
	case e.Status >= 500:
		e.class = ErrUnavailable
		return true
	case e.Status == http.StatusNotFound || e.Status == http.StatusGone:
		e.class = ErrNotFound
	case e.Status == http.StatusForbidden:
		e.class = ErrForbidden
	case e.Status == http.StatusUnauthorized:
		e.class = ErrUnauthorized
	case e.Status == http.StatusNotAcceptable:
		e.class = ErrTooLarge
	default:
		e.class = ErrInvalid
	}
	return false
}

// retryAfter reads Retry-After (seconds or a date) or x-ratelimit-reset (epoch seconds); 0
// means "use the backoff".
func retryAfter(h http.Header) time.Duration {
	if d, ok := backoff.RetryAfter(h, time.Now()); ok {
		return max(d, time.Millisecond)
	}
	if s, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		return max(time.Until(time.Unix(s, 0)), time.Second)
	}
	return 0
}

func statusOf(r *http.Response, fallback int) int {
	if r != nil {
		return r.StatusCode
	}
	return fallback
}

// redactURL drops user info, query and fragment: archive links carry a token in the query.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<url>"
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return u.String()
}

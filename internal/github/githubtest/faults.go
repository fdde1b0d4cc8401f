package githubtest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Fault makes the fake fail requests of one operation (by operationId, "" for any) the way
// GitHub does. It applies to the next Times matching requests (default 1), after the request
// was matched and validated, before authentication.
type Fault struct {
	Operation string
	Status    int // 403, 404, 429, 500, 502, ...
	// Secondary marks a 403/429 as GitHub's secondary rate limit (message and documentation URL).
	Secondary bool
	// RetryAfter, when not nil, is sent as the Retry-After header in whole seconds.
	RetryAfter *time.Duration
	// Reset, when not zero, sends x-ratelimit-remaining: 0 and x-ratelimit-reset (primary limit).
	Reset time.Time
	Times int
	hits  int
}

// SecondaryRateLimit is GitHub's secondary rate limit: 403 with Retry-After.
func SecondaryRateLimit(op string, retryAfter time.Duration) Fault {
	return Fault{Operation: op, Status: http.StatusForbidden, Secondary: true, RetryAfter: &retryAfter}
}

// TooManyRequests is a 429 with Retry-After.
func TooManyRequests(op string, retryAfter time.Duration) Fault {
	return Fault{Operation: op, Status: http.StatusTooManyRequests, Secondary: true, RetryAfter: &retryAfter}
}

// PrimaryRateLimit is an exhausted primary rate limit resetting at reset.
func PrimaryRateLimit(op string, reset time.Time) Fault {
	return Fault{Operation: op, Status: http.StatusForbidden, Reset: reset}
}

// ServerError is one 5xx.
func ServerError(op string, status int) Fault { return Fault{Operation: op, Status: status} }

// NotFound is a 404.
func NotFound(op string) Fault { return Fault{Operation: op, Status: http.StatusNotFound} }

// Forbidden is a 403 without rate-limit signals (a missing permission).
func Forbidden(op string) Fault { return Fault{Operation: op, Status: http.StatusForbidden} }

// InjectFault queues a fault. Faults apply in the order injected.
func (s *Server) InjectFault(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// fault writes the first pending fault for op and reports whether it did.
func (s *Server) fault(w http.ResponseWriter, op string) bool {
	s.mu.Lock()
	var f *Fault
	for _, c := range s.faults {
		if (c.Operation == "" || c.Operation == op) && c.hits < c.Times {
			c.hits++
			f = c
			break
		}
	}
	s.mu.Unlock()
	if f == nil {
		return false
	}
	if f.RetryAfter != nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter.Round(time.Second)/time.Second)))
	}
	if !f.Reset.IsZero() {
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Used", "5000")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(f.Reset.Unix(), 10))
		w.Header().Set("X-RateLimit-Resource", "core")
	}
	msg, doc := http.StatusText(f.Status), "https://docs.github.com/rest"
	switch {
	case f.Secondary:
		msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
		doc = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
		if f.Status == http.StatusForbidden {
			doc = "https://docs.github.com/free-pro-team@latest/rest/overview/resources-in-the-rest-api#secondary-rate-limits"
		}
	case !f.Reset.IsZero():
		msg = "API rate limit exceeded for installation."
	}
	writeJSON(w, f.Status, map[string]any{"message": msg, "documentation_url": doc, "status": fmt.Sprint(f.Status)})
	return true
}

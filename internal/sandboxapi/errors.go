package sandboxapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/asterhq/aster/internal/sandbox"
)

// Error classes of the HTTP layer itself; the sandbox classes
// (sandbox.ErrInvalidSpec, ErrBusy, ...) cover everything else.
var (
	ErrUnauthorized     = errors.New("unauthorized")
	ErrForbidden        = errors.New("forbidden")
	ErrNotFound         = errors.New("not found")
	ErrMethodNotAllowed = errors.New("method not allowed")
	ErrMediaType        = errors.New("unsupported media type")
	ErrRequestTimeout   = errors.New("request timeout")
)

// StatusFor maps an error to its HTTP status and stable code. It is the only
// place where errors become statuses.
func StatusFor(err error) (status int, code string) {
	switch {
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, ErrMethodNotAllowed):
		return http.StatusMethodNotAllowed, "method_not_allowed"
	case errors.Is(err, ErrMediaType):
		return http.StatusUnsupportedMediaType, "unsupported_media_type"
	case errors.Is(err, ErrRequestTimeout):
		return http.StatusRequestTimeout, "request_timeout"
	case errors.Is(err, sandbox.ErrInvalidSpec), errors.Is(err, sandbox.ErrUnknownImage):
		return http.StatusBadRequest, sandbox.ErrorCode(err)
	case errors.Is(err, sandbox.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, sandbox.ErrorCode(err)
	case errors.Is(err, sandbox.ErrBusy):
		return http.StatusTooManyRequests, sandbox.ErrorCode(err)
	case errors.Is(err, sandbox.ErrUnavailable):
		return http.StatusServiceUnavailable, sandbox.ErrorCode(err)
	}
	return http.StatusInternalServerError, "internal"
}

// WriteError answers with the JSON error body for err. retryAfter (seconds),
// when positive, is sent as Retry-After on 429 and 503.
func WriteError(w http.ResponseWriter, err error, retryAfter int) {
	status, code := StatusFor(err)
	h := w.Header()
	h.Set("Content-Type", ContentTypeJSON)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="aster"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if retryAfter > 0 {
			h.Set("Retry-After", strconv.Itoa(retryAfter))
		}
	case http.StatusMethodNotAllowed:
		h.Set("Allow", "POST")
	}
	msg := err.Error()
	if status == http.StatusInternalServerError {
		// Internal errors may carry details of the host; say only that it happened.
		msg = "internal error"
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
}

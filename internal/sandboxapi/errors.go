package sandboxapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/asterhq/aster/api"
)

// StatusFor maps an error to its HTTP status and stable code (its class,
// api.ErrorCode, and that code's status, api.HTTPStatus). It is the only
// place where errors become statuses.
func StatusFor(err error) (status int, code string) {
	code = api.ErrorCode(err)
	return api.HTTPStatus(code), code
}

// WriteError answers with the JSON error body for err. retryAfter (seconds),
// when positive, is sent as Retry-After on 429 and 503.
func WriteError(w http.ResponseWriter, err error, retryAfter int) {
	status, code := StatusFor(err)
	h := w.Header()
	h.Set("Content-Type", api.ContentTypeJSON)
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
		// The server sets the route's own methods; /v1/* handlers take POST.
		if h.Get("Allow") == "" {
			h.Set("Allow", "POST")
		}
	}
	msg := err.Error()
	if status == http.StatusInternalServerError {
		// Internal errors may carry details of the host; say only that it happened.
		msg = "internal error"
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.ErrorDetail{Code: code, Message: msg}})
}

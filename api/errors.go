package api

import (
	"errors"
	"net/http"
)

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a machine-readable code and a message for a person.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error classes. A server wraps its errors with them, and the client's
// errors unwrap to them, so errors.Is(err, api.ErrBusy) works the same on
// either side of the wire.
var (
	// ErrInvalidSpec: the request is malformed or asks for something not allowed.
	ErrInvalidSpec = errors.New("invalid spec")
	// ErrUnknownImage: the image is not on the server's allowlist or not present.
	ErrUnknownImage = errors.New("unknown image")
	// ErrTooLarge: a body, file, snapshot or limit is over the server's cap.
	ErrTooLarge = errors.New("too large")
	// ErrBusy: the server is at capacity; retry later (429, Retry-After).
	ErrBusy = errors.New("busy")
	// ErrUnavailable: the container engine or the server cannot run jobs now (503).
	ErrUnavailable = errors.New("runtime unavailable")

	// ErrUnauthorized: no bearer token, or one the server does not accept (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the server refuses the request whoever sends it: a web
	// page's (Origin header), or a non-loopback Host on a server without tokens (403).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: no such route, or a route this server does not serve (404).
	ErrNotFound = errors.New("not found")
	// ErrMethodNotAllowed: the route takes another method (405).
	ErrMethodNotAllowed = errors.New("method not allowed")
	// ErrMediaType: a Content-Type the route does not read (415).
	ErrMediaType = errors.New("unsupported media type")
	// ErrRequestTimeout: the body came too slowly, or not at all (408).
	ErrRequestTimeout = errors.New("request timeout")
)

// Error codes: the "code" of an ErrorDetail, one per error class.
const (
	CodeInvalidSpec      = "invalid_spec"
	CodeUnknownImage     = "unknown_image"
	CodeTooLarge         = "too_large"
	CodeBusy             = "busy"
	CodeUnavailable      = "unavailable"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeMediaType        = "unsupported_media_type"
	CodeRequestTimeout   = "request_timeout"
	// CodeInternal is every error of no class; its message says only that
	// it happened.
	CodeInternal = "internal"
)

// classes pairs each code with its class and HTTP status, in the order
// ErrorCode looks for them.
var classes = [...]struct {
	code   string
	class  error
	status int
}{
	{CodeUnauthorized, ErrUnauthorized, http.StatusUnauthorized},
	{CodeForbidden, ErrForbidden, http.StatusForbidden},
	{CodeNotFound, ErrNotFound, http.StatusNotFound},
	{CodeMethodNotAllowed, ErrMethodNotAllowed, http.StatusMethodNotAllowed},
	{CodeMediaType, ErrMediaType, http.StatusUnsupportedMediaType},
	{CodeRequestTimeout, ErrRequestTimeout, http.StatusRequestTimeout},
	{CodeInvalidSpec, ErrInvalidSpec, http.StatusBadRequest},
	{CodeUnknownImage, ErrUnknownImage, http.StatusBadRequest},
	{CodeTooLarge, ErrTooLarge, http.StatusRequestEntityTooLarge},
	{CodeBusy, ErrBusy, http.StatusTooManyRequests},
	{CodeUnavailable, ErrUnavailable, http.StatusServiceUnavailable},
}

// ErrorCode is the code of err's class, or CodeInternal.
func ErrorCode(err error) string {
	for _, c := range classes {
		if errors.Is(err, c.class) {
			return c.code
		}
	}
	return CodeInternal
}

// ErrorClass is the error class a code names, or nil for an unknown code.
func ErrorClass(code string) error {
	for _, c := range classes {
		if c.code == code {
			return c.class
		}
	}
	return nil
}

// HTTPStatus is the HTTP status an error code is answered with (500 for
// CodeInternal and unknown codes).
func HTTPStatus(code string) int {
	for _, c := range classes {
		if c.code == code {
			return c.status
		}
	}
	return http.StatusInternalServerError
}

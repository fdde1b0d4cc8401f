package sandbox

import (
	"errors"
	"fmt"
)

// Error classes. Every layer wraps one of these (fmt.Errorf("...: %w", ErrX)) so
// that callers classify by behaviour with errors.Is, and the HTTP layer maps each
// class to a status code in exactly one place.
var (
	// ErrInvalidSpec: the request itself is wrong (missing argv, bad limits,
	// hostile archive). Not worth retrying. HTTP 400.
	ErrInvalidSpec = errors.New("invalid spec")
	// ErrUnknownImage: the image is not on the allowlist or not present. HTTP 400.
	ErrUnknownImage = errors.New("unknown image")
	// ErrTooLarge: an input (body, archive, stdin) is over its cap. HTTP 413.
	ErrTooLarge = errors.New("too large")
	// ErrBusy: admission control refused the run (queue full or queue timeout).
	// Retry later. HTTP 429.
	ErrBusy = errors.New("busy")
	// ErrUnavailable: the runtime cannot run sandboxes now (engine down). HTTP 503.
	ErrUnavailable = errors.New("runtime unavailable")
	// ErrProtocol: aster-init broke the framed protocol. Reported as StatusError.
	ErrProtocol = errors.New("init protocol")
)

// Invalidf returns an ErrInvalidSpec with a message for the caller.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, args...))
}

// ErrorCode is the stable, machine-readable name of an error class, as used in
// API error bodies: invalid_spec, unknown_image, too_large, busy, unavailable,
// internal.
func ErrorCode(err error) string {
	switch {
	case errors.Is(err, ErrInvalidSpec):
		return "invalid_spec"
	case errors.Is(err, ErrUnknownImage):
		return "unknown_image"
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	case errors.Is(err, ErrBusy):
		return "busy"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	default:
		return "internal"
	}
}

package sandbox

import (
	"errors"
	"fmt"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/workspace"
)

// Error classes. Every layer wraps one of these (fmt.Errorf("...: %w", ErrX)) so
// that callers classify by behaviour with errors.Is, and the HTTP layer maps each
// class to a status code in exactly one place. They are the public api classes,
// so an error the Go client returns is classified the same way as a local one.
var (
	// ErrInvalidSpec: the request itself is wrong (missing argv, bad limits,
	// hostile archive). Not worth retrying. HTTP 400.
	ErrInvalidSpec = api.ErrInvalidSpec
	// ErrUnknownImage: the image is not on the allowlist or not present. HTTP 400.
	ErrUnknownImage = api.ErrUnknownImage
	// ErrTooLarge: an input (body, archive, stdin) is over its cap. HTTP 413.
	ErrTooLarge = api.ErrTooLarge
	// ErrBusy: admission control refused the run (queue full or queue timeout).
	// Retry later. HTTP 429.
	ErrBusy = api.ErrBusy
	// ErrUnavailable: the runtime cannot run sandboxes now (engine down). HTTP 503.
	ErrUnavailable = api.ErrUnavailable
	// ErrProtocol: aster-init broke the framed protocol. Reported as StatusError.
	ErrProtocol = errors.New("init protocol")
)

// Invalidf returns an ErrInvalidSpec with a message for the caller.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, args...))
}

// WorkspaceError classes an error met while doing op with an archive ("workspace",
// "snapshot"): ErrTooLarge for one over its caps (workspace.ErrTooLarge),
// ErrInvalidSpec for an unsafe entry (workspace.ErrUnsafe), as "<class>: <op>:
// <err>". An error already of one of those classes is only prefixed with op; any
// other is classed as otherwise, or left unclassed when otherwise is nil. It is
// the one mapping of package workspace's errors (Manager, Session, the HTTP and
// MCP snapshot readers).
func WorkspaceError(op string, err, otherwise error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workspace.ErrTooLarge):
		return fmt.Errorf("%w: %s: %w", ErrTooLarge, op, err)
	case errors.Is(err, workspace.ErrUnsafe):
		return fmt.Errorf("%w: %s: %w", ErrInvalidSpec, op, err)
	case errors.Is(err, ErrInvalidSpec), errors.Is(err, ErrTooLarge), otherwise == nil:
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%w: %s: %w", otherwise, op, err)
}

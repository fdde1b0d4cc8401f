package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/asterhq/aster/internal/sandbox"
)

// classify maps API errors onto the sandbox error classes, in one place: an API
// server that cannot be reached or is overloaded is sandbox.ErrUnavailable, a
// namespace quota that refuses another Pod is sandbox.ErrBusy.
func classify(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, sandbox.ErrBusy), errors.Is(err, sandbox.ErrUnknownImage):
		return fmt.Errorf("%s: %w", op, err)
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
		return fmt.Errorf("%s: %w: the namespace quota allows no more sandbox Pods: %v", op, sandbox.ErrBusy, err)
	case unreachable(err):
		return fmt.Errorf("%s: %w: %v", op, sandbox.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// unreachable says the API server could not be reached or could not serve.
func unreachable(err error) bool {
	if apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se.ErrStatus.Code >= 500
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "http2: client connection lost") ||
		strings.Contains(msg, "the server is currently unable")
}

package runtimekit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
)

// AwaitHello reads aster-init's first frame from r and checks it is a hello of
// this protocol version, within timeout. diag, when set, adds what the runtime
// knows (init's stderr, say) to the error when init never speaks. A runtime
// calls it once its sandbox is started, so Prepare returns only ready sandboxes.
func AwaitHello(ctx context.Context, r *initproto.Reader, timeout time.Duration, diag func() string) error {
	_, err := AwaitHelloFrame(ctx, r, timeout, diag)
	return err
}

// AwaitHelloFrame is AwaitHello, returning the hello.
func AwaitHelloFrame(ctx context.Context, r *initproto.Reader, timeout time.Duration, diag func() string) (initproto.Hello, error) {
	type result struct {
		f   initproto.Frame
		err error
	}
	ch := make(chan result, 1)
	go func() {
		f, err := r.Next()
		ch <- result{f, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case got := <-ch:
		if got.err != nil {
			more := ""
			if diag != nil {
				more = diag()
			}
			return initproto.Hello{}, fmt.Errorf("%w: aster-init did not start: %v%s", sandbox.ErrProtocol, got.err, more)
		}
		if got.f.Type != initproto.TypeHello {
			return initproto.Hello{}, fmt.Errorf("%w: first frame from aster-init is %s", sandbox.ErrProtocol, got.f.Type)
		}
		h, err := initproto.DecodeHello(got.f.Payload)
		if err != nil {
			return initproto.Hello{}, fmt.Errorf("%w: %v", sandbox.ErrProtocol, err)
		}
		return h, nil
	case <-timer.C:
		more := ""
		if diag != nil {
			more = diag()
		}
		return initproto.Hello{}, fmt.Errorf("%w: %w within %s%s", sandbox.ErrProtocol, ErrNoHello, timeout, more)
	case <-ctx.Done():
		return initproto.Hello{}, context.Cause(ctx)
	}
}

// ErrNoHello is in the error of AwaitHello when the sandbox said nothing
// within its time: a runtime may start a fresh sandbox once.
var ErrNoHello = errors.New("aster-init did not say hello")

// ErrUsed is what Instance.Run returns the second time: a sandbox runs exactly
// one job.
var ErrUsed = errors.New("sandbox instance already used: a sandbox runs exactly one job")

// UsedResult is the Result that goes with ErrUsed.
func UsedResult() sandbox.Result {
	return sandbox.Result{Status: sandbox.StatusError, ExitCode: -1, Error: ErrUsed.Error()}
}

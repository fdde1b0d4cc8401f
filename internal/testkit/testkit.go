// Package testkit holds the few test helpers every package's tests need
// alike and no domain owns: a buffer many goroutines write while the test
// reads it, a poll for a state no event announces, a receive with a
// deadline, a free port, a server run until the test ends and a command's
// exit code and output, and a private TLS host on loopback (a test CA and
// its server certificate). Tests only.
package testkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// SyncBuffer collects a command's output or logs from many goroutines
// while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor polls cond every 20 ms until it holds, and fails the test when it
// still does not after timeout; what names the awaited state in the failure
// (a job claimed, a review posted, a sandbox removed). Call it from the
// test's goroutine.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Receive returns the next value on c, and fails the test when none comes
// within the wait. Call it from the test's goroutine.
func Receive[T any](t testing.TB, c <-chan T, within time.Duration) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(within):
		t.Fatalf("no answer within %s", within)
	case <-t.Context().Done():
		t.Fatalf("test ended waiting for an answer")
	}
	var zero T
	return zero
}

// FreeAddr returns a loopback address no one listened on a moment ago, for a
// server the test starts as a separate process (which must bind it itself).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Server is a server a test runs in its own goroutine on a loopback port.
type Server struct {
	// URL is "http://" and the address it listens on.
	URL    string
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Serve listens on a free loopback port and runs serve there with a
// context that Stop cancels. Unless the test stopped it first, it is stopped
// when the test ends, and an error from serve (which must return nil once its
// context is cancelled) fails the test. Call it on the test goroutine.
func Serve(t testing.TB, serve func(ctx context.Context, ln net.Listener) error) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{URL: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- serve(ctx, ln) }()
	t.Cleanup(func() {
		if err := s.Stop(time.Minute); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s
}

// Stop cancels the server's context and waits up to within for serve to
// return, and returns its error, or one saying it did not return in time.
// Later calls return the first call's answer at once.
func (s *Server) Stop(within time.Duration) error {
	s.once.Do(func() {
		s.cancel()
		select {
		case s.err = <-s.done:
		case <-time.After(within):
			s.err = fmt.Errorf("did not return within %s of its context's end", within)
		}
	})
	return s.err
}

// Run runs cmd with its stdout and stderr captured and returns its exit
// code and the two streams; a command that could not be started fails the
// test. cmd.Stdout and cmd.Stderr must be unset.
func Run(t testing.TB, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// Same calls f twenty times and fails the test unless every call gave the
// same text; it returns that text. It is for output built from a map, where
// Go's random iteration order makes a missing sort show within a few calls.
func Same(t testing.TB, f func() string) string {
	t.Helper()
	first := f()
	for i := 1; i < 20; i++ {
		if got := f(); got != first {
			t.Errorf("call %d gave\n%s\nthe first gave\n%s", i+1, got, first)
			return first
		}
	}
	return first
}

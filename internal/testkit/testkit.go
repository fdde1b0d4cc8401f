// Package testkit holds the few test helpers every package's tests need
// alike and no domain owns: a buffer many goroutines write while the test
// reads it, and a poll for a state no event announces. Tests only.
package testkit

import (
	"bytes"
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

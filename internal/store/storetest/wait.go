package storetest

import (
	"testing"
	"time"
)

// WaitFor polls cond every 20 ms until it holds, and fails the test when it still does not
// after timeout; what names the awaited state in the failure. It is the wait of the store's
// and the App's queue tests (a job claimed, a review posted), which have no event to block on.
// Call it from the test's goroutine.
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

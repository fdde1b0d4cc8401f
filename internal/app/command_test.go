package app

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/testkit"
)

var errEngineDown = errors.New("sandbox engine unreachable")

// TestOutsiderCommandStartsNothing is SECURITY.md O3: a /aster review from a user without
// write access starts no work whatever the pull request's state: not when its head was
// never reviewed (opened before the App was installed), not when the last run of the head
// failed. No reviewer call, no check run, no review, no comment; the history says why.
// Then the same command from a collaborator with write access reviews that head.
func TestOutsiderCommandStartsNothing(t *testing.T) {
	t.Run("never reviewed", func(t *testing.T) { forEachDB(t, testOutsiderNeverReviewed) })
	t.Run("last run failed", func(t *testing.T) { forEachDB(t, testOutsiderAfterFailure) })
}

func testOutsiderNeverReviewed(t *testing.T, dbURL string) {
	rv := &scripted{}
	h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// FIXME x\n"})
	h.openPR(11, base, head) // opened before the App was installed: no event
	h.fake.SetPermission(h.owner, h.repo, "stranger", "read")
	before := len(h.fake.Requests())
	if got := h.deliver("issue_comment", "d-cmd", h.commentEvent(11, "stranger", "/aster review")); got != http.StatusAccepted {
		t.Fatalf("command: %d", got)
	}
	assertRefusedOnly(t, h, rv, 11, 1, before)
	assertWriterReviews(t, h, rv, 11, 2, head)
}

func testOutsiderAfterFailure(t *testing.T, dbURL string) {
	rv := &scripted{err: errEngineDown}
	h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL, queue: store.QueueOptions{MaxAttempts: 2}})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// FIXME x\n"})
	h.push("d-open", "opened", 12, base, head, "")
	if recs := h.waitHistory(12, 1, 30*time.Second); recs[0].Outcome != store.OutcomeFailed {
		t.Fatalf("first run: %+v", recs[0])
	}
	rv.mu.Lock()
	rv.err = nil // a review that ran now would succeed and post
	rv.mu.Unlock()
	h.fake.SetPermission(h.owner, h.repo, "stranger", "read")
	before := len(h.fake.Requests())
	if got := h.deliver("issue_comment", "d-cmd", h.commentEvent(12, "stranger", "/aster review")); got != http.StatusAccepted {
		t.Fatalf("command: %d", got)
	}
	assertRefusedOnly(t, h, rv, 12, 2, before)
	assertWriterReviews(t, h, rv, 12, 3, head)
}

// assertRefusedOnly waits for the refused command's history record (the n-th) and checks
// that the command started nothing: since the request numbered before, the App only read the
// pull request and the commenter's permission, and the reviewer never ran.
func assertRefusedOnly(t *testing.T, h *harness, rv *scripted, number, n, before int) {
	t.Helper()
	recs := h.waitHistory(number, n, 20*time.Second)
	if r := recs[n-1]; r.Outcome != store.OutcomeSkipped || !strings.Contains(r.Reason, "/aster review by stranger refused: needs write access") {
		t.Fatalf("command by a reader: %+v", r)
	}
	if c := rv.calls(); len(c) != 0 {
		t.Fatalf("the reviewer ran %d time(s) for a refused command", len(c))
	}
	if rs := h.fake.Reviews(h.owner, h.repo, number); len(rs) != 0 {
		t.Fatalf("%d reviews posted for a refused command", len(rs))
	}
	for _, r := range h.fake.Requests()[before:] {
		switch r.Operation {
		case "apps/create-installation-access-token", "pulls/get", "repos/get-collaborator-permission-level":
		default:
			t.Errorf("a refused command made the App call %s", r.Operation)
		}
	}
}

// assertWriterReviews sends /aster review from a collaborator with write access and checks
// that it reviews head (the n-th history record) and posts the review: the refusal before
// it left nothing behind that would hold a permitted command back.
func assertWriterReviews(t *testing.T, h *harness, rv *scripted, number, n int, head string) {
	t.Helper()
	h.fake.SetPermission(h.owner, h.repo, "collaborator", "write")
	if got := h.deliver("issue_comment", "d-cmd-writer", h.commentEvent(number, "collaborator", "/aster review")); got != http.StatusAccepted {
		t.Fatalf("command by a writer: %d", got)
	}
	recs := h.waitHistory(number, n, 20*time.Second)
	if r := recs[n-1]; r.Outcome != store.OutcomePosted || r.HeadSHA != head || r.Cause != "command" {
		t.Fatalf("command by a writer: %+v", r)
	}
	if c := rv.calls(); len(c) != 1 || c[0].Head.SHA != head {
		t.Fatalf("reviewer calls after a writer's command: %d", len(c))
	}
	if rs := h.fake.Reviews(h.owner, h.repo, number); len(rs) != 1 || rs[0].CommitID != head {
		t.Fatalf("reviews after a writer's command: %+v", rs)
	}
}

// An outsider's command that arrives while a push waits for its review takes nothing
// from the push: the push's job reviews the new head as it would have without it.
func TestOutsiderCommandLeavesAPushReviewed(t *testing.T) {
	forEachDB(t, func(t *testing.T, dbURL string) {
		rv := &scripted{block: make(chan struct{})}
		h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL})
		base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
		head1 := h.git.Commit(base, "one", map[string]string{"main.go": baseMain + "// TODO one\n"})
		h.push("d-open", "opened", 13, base, head1, "")
		// Running, with head1's diff in hand: a push before the diff is read would
		// make the first review read the second head's diff.
		testkit.WaitFor(t, "the first review to start", 10*time.Second, func() bool {
			p, _, _ := h.store.Pull(context.Background(), store.PullKey{Owner: h.owner, Repo: h.repo, Number: 13})
			return p.RunningJob != 0 && rv.begun() == 1
		})
		head2 := h.git.Commit(head1, "two", map[string]string{"main.go": baseMain + "// TODO one\n// TODO two\n"})
		h.push("d-sync", "synchronize", 13, base, head2, head1) // waits behind the running job
		h.fake.SetPermission(h.owner, h.repo, "stranger", "read")
		if got := h.deliver("issue_comment", "d-cmd", h.commentEvent(13, "stranger", "/aster review")); got != http.StatusAccepted {
			t.Fatalf("command: %d", got)
		}
		close(rv.block)
		recs := h.waitHistory(13, 2, 20*time.Second)
		if recs[0].HeadSHA != head1 || recs[0].Outcome != store.OutcomePosted || recs[1].HeadSHA != head2 || recs[1].Outcome != store.OutcomePosted {
			t.Fatalf("history: %+v", recs)
		}
		if n := len(rv.calls()); n != 2 {
			t.Fatalf("%d reviews, want 2", n)
		}
	})
}

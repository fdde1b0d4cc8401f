package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReplayedDeliveriesRunOnce is SECURITY H6 end to end, on GitHub's example payloads
// against the fake GitHub: a signed /aster review comment replayed under three new delivery
// ids, or under its own id re-cased, is one review; an edit of the comment (a new
// updated_at) is a second one only when the edited body is a command; a pull_request event
// replayed under new ids adds no job.
func TestReplayedDeliveriesRunOnce(t *testing.T) {
	forEachDB(t, testReplayedDeliveries)
}

func testReplayedDeliveries(t *testing.T, dbURL string) {
	rv := &scripted{}
	h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// BUG here\n"})
	h.openPR(7, base, head)
	h.fake.SetPermission("acme", "widgets", "maintainer", "maintain")

	opened := h.prEvent("opened", 7, head, base, "")
	if got := h.deliver("pull_request", "0b6a4c10-cc78-11e3-81ab-4c9367dc0958", opened); got != http.StatusAccepted {
		t.Fatalf("opened: %d", got)
	}
	h.waitHistory(7, 1, 20*time.Second)

	const commentID = 492700400 // the example's own comment id
	cmd := h.commentEventAs("created", commentID, "", 7, "maintainer", "/aster review")
	const cmdDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	if got := h.deliver("issue_comment", cmdDelivery, cmd); got != http.StatusAccepted {
		t.Fatalf("command: %d", got)
	}
	recs := h.waitHistory(7, 2, 20*time.Second)
	if recs[1].Cause != "command" {
		t.Fatalf("second record %+v: want the command's run", recs[1])
	}
	jobsBefore := h.jobs()

	// The same signed body under three new delivery ids, and its own id upper-cased.
	for i := range 3 {
		if got := h.deliver("issue_comment", fmt.Sprintf("72d3162e-cc78-11e3-81ab-4c9367dc095%d", i), cmd); got != http.StatusOK {
			t.Errorf("replay %d of the command: %d, want 200", i, got)
		}
	}
	if got := h.deliver("issue_comment", strings.ToUpper(cmdDelivery), cmd); got != http.StatusOK {
		t.Errorf("re-cased delivery id: %d, want 200", got)
	}
	// The pull_request event under new ids: the head is reviewed already.
	for i := range 3 {
		if got := h.deliver("pull_request", fmt.Sprintf("0b6a4c10-cc78-11e3-81ab-4c9367dc095%d", i), opened); got != http.StatusAccepted {
			t.Errorf("replay %d of opened: %d, want 202", i, got)
		}
	}
	time.Sleep(500 * time.Millisecond) // a job queued by mistake would be picked up by now
	if n := h.jobs(); n != jobsBefore {
		t.Fatalf("replays added %d jobs", n-jobsBefore)
	}
	if n := len(h.history(7)); n != 2 {
		t.Fatalf("history after replays: %d records, want 2", n)
	}
	if n := len(rv.calls()); n != 2 {
		t.Fatalf("the reviewer ran %d times, want 2 (opened, the command)", n)
	}

	// An edit to text that is not a command: nothing. An edit that is (a new updated_at):
	// one more run; that edit replayed: nothing.
	chat := h.commentEventAs("edited", commentID, "2019-05-15T15:20:22Z", 7, "maintainer", "thanks, looks good")
	if got := h.deliver("issue_comment", "edit-chat", chat); got != http.StatusOK {
		t.Fatalf("edit to a non-command: %d, want 200", got)
	}
	edit := h.commentEventAs("edited", commentID, "2019-05-15T15:21:00Z", 7, "maintainer", "/aster review again")
	if got := h.deliver("issue_comment", "edit-command", edit); got != http.StatusAccepted {
		t.Fatalf("edit to a command: %d, want 202", got)
	}
	recs = h.waitHistory(7, 3, 20*time.Second)
	if recs[2].Cause != "command" {
		t.Fatalf("third record %+v: want the edit's run", recs[2])
	}
	if got := h.deliver("issue_comment", "edit-command-replay", edit); got != http.StatusOK {
		t.Fatalf("replayed edit: %d, want 200", got)
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(h.history(7)); n != 3 {
		t.Fatalf("history: %d records, want 3", n)
	}
	if n := len(rv.calls()); n != 3 {
		t.Fatalf("the reviewer ran %d times, want 3", n)
	}
	if n := len(h.fake.Reviews("acme", "widgets", 7)); n != 1 {
		t.Fatalf("%d reviews posted, want 1 (re-reviews found nothing new)", n)
	}
	c, err := h.store.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// opened + its 3 replays (folded, recorded), the command, the edit.
	if c.Commands != 2 || c.Deliveries != 6 {
		t.Fatalf("counts %+v: want 2 commands, 6 deliveries", c)
	}
}

func (h *harness) jobs() int {
	h.t.Helper()
	jobs, err := h.store.Jobs(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return len(jobs)
}

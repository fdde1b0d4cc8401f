package app

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/store"
)

// lostAnswer is a RepoAPI whose first answer to a command reaches GitHub while its
// response is lost: the attempt fails after the comment exists, as a crash between
// answering and recording would leave it.
type lostAnswer struct {
	RepoAPI
	lost *atomic.Bool
}

func (l lostAnswer) CreateIssueComment(ctx context.Context, number int, body string) (github.IssueComment, error) {
	c, err := l.RepoAPI.CreateIssueComment(ctx, number, body)
	if err == nil && strings.Contains(body, "<!-- aster:ack=") && l.lost.CompareAndSwap(false, true) {
		return github.IssueComment{}, errors.New("connection reset (the answer was posted)")
	}
	return c, err
}

// answers returns Aster's answers to commands on the pull request, by the command's comment.
func answers(h *harness, number int) map[string][]string {
	out := map[string][]string{}
	for _, c := range h.fake.IssueComments(h.owner, h.repo, number) {
		if m := ackMarker.FindStringSubmatch(c.Body); m != nil && c.Author == h.fake.BotLogin() {
			out[m[1]] = append(out[m[1]], c.Body)
		}
	}
	return out
}

func (h *harness) paused(number int) string {
	h.t.Helper()
	p, _, err := h.store.Pull(context.Background(), store.PullKey{Owner: h.owner, Repo: h.repo, Number: number})
	if err != nil {
		h.t.Fatal(err)
	}
	return p.PausedBy
}

func (h *harness) jobCount() int {
	h.t.Helper()
	jobs, err := h.store.Jobs(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return len(jobs)
}

// TestPauseResumeHelp: /aster pause by a collaborator stops automatic reviews of the pull
// request (a push then queues nothing), durably in the store; a reader's /aster resume is
// refused in place and changes nothing; /aster help is answered in place; /aster review
// still reviews while paused; /aster resume reviews the head the pause held back. Every
// command is answered exactly once, also when the first answer's response is lost (the
// retry finds its answer and does not post another), and a replayed command changes
// nothing.
func TestPauseResumeHelp(t *testing.T) {
	forEachDB(t, func(t *testing.T, dbURL string) {
		rv := &scripted{}
		var lost atomic.Bool
		h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL,
			wrap: func(api RepoAPI) RepoAPI { return lostAnswer{RepoAPI: api, lost: &lost} }})
		h.fake.SetPermission(h.owner, h.repo, "octocat", "write")
		h.fake.SetPermission(h.owner, h.repo, "mallory", "read")
		base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
		head1 := h.git.Commit(base, "one", map[string]string{"main.go": baseMain + "// TODO one\n"})
		h.push("p-1", "opened", 31, base, head1, "")
		if r := h.waitHistory(31, 1, 20*time.Second)[0]; r.Outcome != store.OutcomePosted {
			t.Fatalf("first review: %+v", r)
		}

		pause := h.commentEventAs("created", 501, "2026-12-05T10:00:00Z", 31, "octocat", "/aster pause\nwhile I rework this")
		if got := h.deliver("issue_comment", "p-pause", pause); got != http.StatusAccepted {
			t.Fatalf("/aster pause: %d", got)
		}
		if r := h.waitHistory(31, 2, 20*time.Second)[1]; r.Outcome != store.OutcomeSkipped || r.Reason != "answered /aster pause by octocat" {
			t.Fatalf("pause record: %+v", r)
		}
		if !lost.Load() {
			t.Fatal("the first answer's response was not lost: the test proves nothing")
		}
		if by := h.paused(31); by != "octocat" {
			t.Fatalf("paused by %q, want octocat", by)
		}

		// A push while paused is recorded and queues nothing.
		jobs := h.jobCount()
		head2 := h.git.Commit(head1, "two", map[string]string{"main.go": baseMain + "// TODO one\n// TODO two\n"})
		h.push("p-2", "synchronize", 31, base, head2, head1)
		if n := h.jobCount(); n != jobs {
			t.Fatalf("a push to a paused pull request queued %d job(s)", n-jobs)
		}

		// A reader cannot resume; anyone's /aster help is answered.
		if got := h.deliver("issue_comment", "p-resume-reader", h.commentEventAs("created", 502, "", 31, "mallory", "/aster resume")); got != http.StatusAccepted {
			t.Fatalf("reader's /aster resume: %d", got)
		}
		h.waitHistory(31, 3, 20*time.Second)
		if by := h.paused(31); by != "octocat" {
			t.Fatalf("a reader's /aster resume unpaused the pull request (paused by %q)", by)
		}
		if got := h.deliver("issue_comment", "p-help", h.commentEventAs("created", 503, "", 31, "octocat", "/aster help")); got != http.StatusAccepted {
			t.Fatalf("/aster help: %d", got)
		}
		h.waitHistory(31, 4, 20*time.Second)
		if n := len(rv.calls()); n != 1 {
			t.Fatalf("%d reviews while paused, want still 1", n)
		}

		// /aster review reviews the head once, and the pull request stays paused.
		if got := h.deliver("issue_comment", "p-review", h.commentEventAs("created", 504, "", 31, "octocat", "/aster review")); got != http.StatusAccepted {
			t.Fatalf("/aster review: %d", got)
		}
		if r := h.waitHistory(31, 5, 20*time.Second)[4]; r.Outcome != store.OutcomePosted || r.HeadSHA != head2 || r.Cause != "command" {
			t.Fatalf("/aster review while paused: %+v", r)
		}
		head3 := h.git.Commit(head2, "three", map[string]string{"main.go": baseMain + "// TODO one\n// TODO two\n// TODO three\n"})
		jobs = h.jobCount()
		h.push("p-3", "synchronize", 31, base, head3, head2)
		if n := h.jobCount(); n != jobs || h.paused(31) != "octocat" {
			t.Fatalf("after /aster review the pull request is no longer paused: %d new job(s)", n-jobs)
		}

		// /aster resume reviews the head held back.
		if got := h.deliver("issue_comment", "p-resume", h.commentEventAs("created", 505, "", 31, "octocat", "/aster resume")); got != http.StatusAccepted {
			t.Fatalf("/aster resume: %d", got)
		}
		if r := h.waitHistory(31, 6, 20*time.Second)[5]; r.Outcome != store.OutcomePosted || r.HeadSHA != head3 || r.SinceSHA != head2 {
			t.Fatalf("review after /aster resume: %+v", r)
		}
		if by := h.paused(31); by != "" {
			t.Fatalf("still paused by %q after /aster resume", by)
		}

		// The pause command replayed under a new delivery id is a duplicate: still resumed.
		if got := h.deliver("issue_comment", "p-pause-replay", pause); got != http.StatusOK {
			t.Fatalf("replayed /aster pause: %d, want 200", got)
		}
		if by := h.paused(31); by != "" {
			t.Fatalf("a replayed /aster pause paused the pull request again (%q)", by)
		}

		got := answers(h, 31)
		want := map[string]string{
			"501": "Paused by `octocat`: Aster reviews no push to this pull request until `/aster resume`",
			"502": "`/aster resume` by `mallory` ignored: it needs write access to the repository.",
			"503": "- `/aster pause`: review no push of this pull request until `/aster resume`.",
			"505": "Resumed by `octocat`: Aster reviews this pull request's pushes again",
		}
		if len(got) != len(want) {
			t.Errorf("answers to %d commands, want %d: %v", len(got), len(want), got)
		}
		for id, text := range want {
			if len(got[id]) != 1 || !strings.Contains(got[id][0], text) {
				t.Errorf("answers to comment %s: %q, want one saying %q", id, got[id], text)
			}
		}
		for _, c := range h.fake.IssueComments(h.owner, h.repo, 31) {
			if publish.IsSummary(c.Body) && ackMarker.MatchString(c.Body) {
				t.Errorf("the summary carries a command's answer marker:\n%s", c.Body)
			}
		}
	})
}

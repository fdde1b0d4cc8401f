package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/store"
)

// linesRan is the scripted reviewer with its analyzer ("lines") reported as having run and
// its findings fingerprinted (by their text), so that a finding it no longer reports is
// resolved.
type linesRan struct{ inner *scripted }

func (l linesRan) Review(ctx context.Context, in ReviewInput) (*review.Report, error) {
	rep, err := l.inner.Review(ctx, in)
	if err == nil {
		rep.Analyzers = append(rep.Analyzers, gate.AnalyzerResult{Name: "lines", Status: gate.StatusOK})
		for i := range rep.Findings {
			rep.Findings[i].Fingerprint = finding.LegacyFingerprint(rep.Findings[i].Finding)
		}
	}
	return rep, err
}

// resolveLost resolves a thread on GitHub and then loses GitHub's answer, once: the
// attempt fails between resolving the thread and recording that it did, as a crash there
// would leave it.
type resolveLost struct {
	RepoAPI
	lost *atomic.Bool
}

func (r resolveLost) ResolveReviewThread(ctx context.Context, id string) error {
	if err := r.RepoAPI.ResolveReviewThread(ctx, id); err != nil {
		return err
	}
	if r.lost.CompareAndSwap(false, true) {
		return errors.New("connection reset (the thread was resolved)")
	}
	return nil
}

func threadOn(t *testing.T, h *harness, number, line int) githubtest.Thread {
	t.Helper()
	for _, th := range h.fake.Threads(h.owner, h.repo, number) {
		if th.Comments[0].Line == line && th.Comments[0].Path == "main.go" {
			return th
		}
	}
	t.Fatalf("no thread on main.go:%d", line)
	return githubtest.Thread{}
}

func summaryOf(h *harness, number int) string {
	for _, c := range h.fake.IssueComments(h.owner, h.repo, number) {
		if publish.IsSummary(c.Body) {
			return c.Body
		}
	}
	return ""
}

// TestDismissalSurvivesRestartsReplicasAndCrashes: push 1 raises three findings; push 2
// fixes one while octocat dismisses another with /aster ignore. GitHub's answer to resolving
// the fixed finding's thread is lost, so the attempt fails after the thread was resolved and
// before that was recorded: the retry replies and resolves nothing twice. The App is then
// restarted (a new process on the same database): push 3 still treats the dismissed error
// as dismissed (the check passes, the summary counts it). A redelivery and an out-of-order
// push (an event for the older head 2 arriving last) post nothing. On Postgres a second
// replica reviews push 4 with the same memory. No comment is ever posted twice.
func TestDismissalSurvivesRestartsReplicasAndCrashes(t *testing.T) {
	forEachDB(t, func(t *testing.T, dbURL string) {
		var lost atomic.Bool
		h := newHarness(t, harnessOptions{reviewer: linesRan{&scripted{}}, dbURL: dbURL,
			queue: store.QueueOptions{ClientID: "replica-a"},
			wrap:  func(api RepoAPI) RepoAPI { return resolveLost{RepoAPI: api, lost: &lost} }})
		h.fake.SetPermission(h.owner, h.repo, "octocat", "write")
		lines := func(extra ...string) string { return baseMain + strings.Join(extra, "") }
		base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
		head1 := h.git.Commit(base, "one", map[string]string{"main.go": lines("// TODO a\n", "// FIXME b\n", "// TODO c\n")})
		h.push("m-1", "opened", 61, base, head1, "")
		if r := h.waitHistory(61, 1, 20*time.Second)[0]; r.Outcome != store.OutcomePosted || r.Conclusion != ConclusionFailure || r.InlineComments != 3 {
			t.Fatalf("push 1: %+v", r)
		}
		nA := strings.Count(baseMain, "\n") + 1
		thA, thB := threadOn(t, h, 61, nA), threadOn(t, h, 61, nA+1)

		h.fake.AddReviewComment(h.owner, h.repo, githubtest.Comment{Number: 61, Author: "octocat", Path: "main.go", Line: nA + 1,
			Body: "/aster ignore generated code", InReplyTo: thB.Comments[0].ID})
		head2 := h.git.Commit(head1, "fix a", map[string]string{"main.go": lines("// done a\n", "// FIXME b\n", "// TODO c\n")})
		h.push("m-2", "synchronize", 61, base, head2, head1)
		if r := h.waitHistory(61, 2, 20*time.Second)[1]; r.HeadSHA != head2 || r.Conclusion != ConclusionSuccess {
			t.Fatalf("push 2: %+v (the dismissed error must no longer fail the check)", r)
		}
		if !lost.Load() {
			t.Fatal("the thread's resolution was never lost: the test proves nothing")
		}
		if th := threadOn(t, h, 61, nA); !th.Resolved || len(th.Comments) != 2 || th.Comments[0].ID != thA.Comments[0].ID {
			t.Fatalf("fixed thread after a lost resolution: resolved %v, %d comments, want resolved with one reply", th.Resolved, len(th.Comments))
		}
		if th := threadOn(t, h, 61, nA+1); len(th.Comments) != 3 || !strings.Contains(th.Comments[2].Body, "Dismissed by `octocat`") {
			t.Fatalf("dismissed thread: %+v", th.Comments)
		}

		// A restart: the same replica id, a new process on the same database.
		h.stop()
		h2 := h.sibling("replica-a")
		head3 := h.git.Commit(head2, "d", map[string]string{"main.go": lines("// done a\n", "// FIXME b\n", "// TODO c\n", "// TODO d\n")})
		h2.push("m-3", "synchronize", 61, base, head3, head2)
		if r := h2.waitHistory(61, 3, 20*time.Second)[2]; r.HeadSHA != head3 || r.Conclusion != ConclusionSuccess || r.InlineComments != 1 {
			t.Fatalf("push 3 after the restart: %+v", r)
		}
		if s := summaryOf(h2, 61); !strings.Contains(s, "1 dismissed on this repository") {
			t.Errorf("summary after the restart:\n%s", s)
		}

		// A redelivery, and the event of head 2 arriving after head 3's: nothing posted.
		comments, reviews := len(h.fake.ReviewComments(h.owner, h.repo, 61)), len(h.fake.Reviews(h.owner, h.repo, 61))
		if got := h2.deliver("pull_request", "m-3", h2.prEvent("synchronize", 61, head3, base, head2)); got != http.StatusOK {
			t.Fatalf("redelivery: %d, want 200", got)
		}
		if got := h2.deliver("pull_request", "m-2-late", h2.prEvent("synchronize", 61, head2, base, head1)); got != http.StatusAccepted {
			t.Fatalf("late event: %d", got)
		}
		if r := h2.waitHistory(61, 4, 20*time.Second)[3]; r.Outcome != store.OutcomeSkipped || r.HeadSHA != head3 {
			t.Fatalf("the late event of an older head: %+v, want skipped on head 3", r)
		}
		if c, r := len(h.fake.ReviewComments(h.owner, h.repo, 61)), len(h.fake.Reviews(h.owner, h.repo, 61)); c != comments || r != reviews {
			t.Fatalf("a redelivery or a late event posted: %d comments (was %d), %d reviews (was %d)", c, comments, r, reviews)
		}

		if dbURL != "" {
			// Another replica beside the restarted one, sharing the database.
			h3 := h2.sibling("replica-b")
			head4 := h.git.Commit(head3, "e", map[string]string{"main.go": lines("// done a\n", "// FIXME b\n", "// TODO c\n", "// TODO d\n", "// TODO e\n")})
			h3.push("m-4", "synchronize", 61, base, head4, head3)
			if r := h3.waitHistory(61, 5, 20*time.Second)[4]; r.HeadSHA != head4 || r.Conclusion != ConclusionSuccess || r.InlineComments != 1 {
				t.Fatalf("push 4 on the second replica: %+v", r)
			}
			if s := summaryOf(h3, 61); !strings.Contains(s, "1 dismissed on this repository") {
				t.Errorf("summary on the second replica:\n%s", s)
			}
		}
		if th := threadOn(t, h, 61, nA); len(th.Comments) != 2 {
			t.Errorf("fixed thread: %d comments at the end, want the finding and one reply", len(th.Comments))
		}
		if th := threadOn(t, h, 61, nA+1); len(th.Comments) != 3 {
			t.Errorf("dismissed thread: %d comments at the end, want finding, command, one answer", len(th.Comments))
		}
		assertNoRepeatsOn(t, h, 61)
	})
}

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
		jobs := h.jobs()
		head2 := h.git.Commit(head1, "two", map[string]string{"main.go": baseMain + "// TODO one\n// TODO two\n"})
		h.push("p-2", "synchronize", 31, base, head2, head1)
		if n := h.jobs(); n != jobs {
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
		jobs = h.jobs()
		h.push("p-3", "synchronize", 31, base, head3, head2)
		if n := h.jobs(); n != jobs || h.paused(31) != "octocat" {
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

// requests records what the Sink asks of the store.
type requests struct{ got []store.ReviewRequest }

func (r *requests) RequestReview(_ context.Context, req store.ReviewRequest) (store.Enqueued, error) {
	r.got = append(r.got, req)
	return store.Enqueued{}, nil
}

func (r *requests) RecordInstallation(context.Context, store.Delivery, store.Installation) error {
	return nil
}

// The Sink turns each command word into its request: review and resolve (and a command
// event without a word, as another forge's adapter makes) force a review; pause, resume
// and help ask for an answer only; a resolved thread asks for the threads to be read.
func TestSinkCommands(t *testing.T) {
	rec := &requests{}
	sink := &Sink{Store: rec}
	repo := github.Repo{Owner: "acme", Name: "widgets"}
	for i, word := range []string{github.CmdReview, "", github.CmdPause, github.CmdResume, github.CmdHelp} {
		ev := &github.ReviewCommandEvent{DeliveryID: fmt.Sprint("d", i), InstallationID: 1, Repo: repo, Number: 3, Command: word,
			CommentID: int64(100 + i), Sender: "octocat"}
		if err := sink.Accept(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Accept(t.Context(), &github.ThreadResolvedEvent{DeliveryID: "t", InstallationID: 1, Repo: repo, Number: 3}); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		force, threads bool
		name           string
	}{{true, false, ""}, {true, false, ""}, {false, false, "pause"}, {false, false, "resume"}, {false, false, "help"}, {false, true, ""}}
	if len(rec.got) != len(want) {
		t.Fatalf("%d requests, want %d", len(rec.got), len(want))
	}
	for i, w := range want {
		r := rec.got[i]
		name := ""
		if r.Command != nil {
			name = r.Command.Name
		}
		if r.Force != w.force || r.Threads != w.threads || name != w.name || r.Pull.Number != 3 {
			t.Errorf("request %d: force %v threads %v command %q, want %+v", i, r.Force, r.Threads, name, w)
		}
	}
}

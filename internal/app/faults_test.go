package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/testkit"
)

// TestFailuresRetryAndPostOnce makes GitHub fail at every posting step once (and rate-limit
// a listing): the job is retried with backoff and the pull request still ends with one
// review, one summary and one completed check run; the model is asked once.
func TestFailuresRetryAndPostOnce(t *testing.T) {
	rv := &scripted{}
	h := newHarness(t, harnessOptions{reviewer: rv})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// TODO x\nfunc f() {} // BUG y\n"})
	h.openPR(5, base, head)
	wait := time.Second
	h.fake.InjectFault(githubtest.SecondaryRateLimit("pulls/list-review-comments", wait))
	h.fake.InjectFault(githubtest.ServerError("pulls/create-review", http.StatusBadGateway))
	h.fake.InjectFault(githubtest.ServerError("issues/create-comment", http.StatusInternalServerError))
	// An update that carries annotations is not resent on a 5xx (GitHub may have added
	// them): each of these two fails one job attempt.
	f := githubtest.ServerError("checks/update", http.StatusServiceUnavailable)
	f.Times = 2
	h.fake.InjectFault(f)

	if got := h.deliver("pull_request", "d-1", h.prEvent("opened", 5, head, base, "")); got != http.StatusAccepted {
		t.Fatalf("opened: %d", got)
	}
	recs := h.waitHistory(5, 1, 60*time.Second)
	if r := recs[0]; r.Outcome != store.OutcomePosted || r.Attempt < 3 {
		t.Fatalf("record: %+v (want posted after retries)", r)
	}
	if n := len(h.fake.Reviews("acme", "widgets", 5)); n != 1 {
		t.Fatalf("%d reviews, want 1", n)
	}
	if n := len(h.fake.IssueComments("acme", "widgets", 5)); n != 1 {
		t.Fatalf("%d summary comments, want 1", n)
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "success" {
		t.Fatalf("check runs: %+v", runs)
	}
	if n := len(rv.calls()); n != 1 {
		t.Fatalf("the reviewer ran %d times across retries, want 1", n)
	}
	h.assertNoSecrets()
}

// checkRunAnswerLost is GitHub creating a check run whose answer never reaches the App (the
// connection drops, or the process dies before it records the id): once, or every time.
type checkRunAnswerLost struct {
	RepoAPI
	lost   *atomic.Bool
	always bool
	// then, when set, runs as the first answer is lost.
	then func()
}

func (r checkRunAnswerLost) CreateCheckRun(ctx context.Context, o github.CheckRunOptions) (github.CheckRun, error) {
	cr, err := r.RepoAPI.CreateCheckRun(ctx, o)
	if err != nil {
		return cr, err
	}
	first := r.lost.CompareAndSwap(false, true)
	if first && r.then != nil {
		r.then()
	}
	if first || r.always {
		return github.CheckRun{}, fmt.Errorf("create check run: %w", io.ErrUnexpectedEOF)
	}
	return cr, nil
}

// TestCheckRunCreatedButNotRecorded: when the attempt that created the check run fails
// before it records the run's id, the retry finds that run by its external id (the job)
// and completes it: one check run on the head, none left in progress (the window the
// two-replica test hit when a replica was killed right after creating one).
func TestCheckRunCreatedButNotRecorded(t *testing.T) {
	rv := &scripted{}
	lost := &atomic.Bool{}
	h := newHarness(t, harnessOptions{reviewer: rv, wrap: func(a RepoAPI) RepoAPI { return checkRunAnswerLost{RepoAPI: a, lost: lost} }})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// TODO x\n"})
	h.push("d-1", "opened", 5, base, head, "")
	h.wantPostedOnRetry(5)
	if !lost.Load() {
		t.Fatal("the check run's answer was never lost: the test tested nothing")
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].HeadSHA != head {
		t.Fatalf("check runs: %+v (want one, completed)", runs)
	}
	if n := len(h.fake.Reviews("acme", "widgets", 5)); n != 1 {
		t.Fatalf("%d reviews, want 1", n)
	}
	if !strings.Contains(h.logs.String(), "found the check run an attempt created but did not record") {
		t.Fatalf("the retry did not say it found the earlier check run:\n%s", h.logs.String())
	}
}

// TestGivingUpCompletesAnUnrecordedCheckRun: a job that gives up completes, as neutral, the
// check run it created but never learnt the id of, rather than leaving it spinning.
func TestGivingUpCompletesAnUnrecordedCheckRun(t *testing.T) {
	lost := &atomic.Bool{}
	h := newHarness(t, harnessOptions{reviewer: &scripted{}, queue: store.QueueOptions{MaxAttempts: 1},
		wrap: func(a RepoAPI) RepoAPI { return checkRunAnswerLost{RepoAPI: a, lost: lost, always: true} }})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// TODO x\n"})
	h.push("d-1", "opened", 5, base, head, "")
	if r := h.waitHistory(5, 1, 60*time.Second)[0]; r.Outcome != store.OutcomeFailed {
		t.Fatalf("record: %+v (want failed)", r)
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != ConclusionNeutral {
		t.Fatalf("check runs: %+v (want one, completed as neutral)", runs)
	}
}

// TestUnrecordedCheckRunOfASupersededHead: the attempt that created the check run loses
// its answer, and before the retry the pull request moves to a newer head. The retry
// reviews the newer head and completes the older head's run (found by its external id) as
// superseded: none is left in progress.
func TestUnrecordedCheckRunOfASupersededHead(t *testing.T) {
	lost := &atomic.Bool{}
	var h *harness
	var base, head, newer string
	h = newHarness(t, harnessOptions{reviewer: &scripted{}, wrap: func(a RepoAPI) RepoAPI {
		return checkRunAnswerLost{RepoAPI: a, lost: lost, then: func() { h.openPR(5, base, newer) }}
	}})
	base = h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head = h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// TODO x\n"})
	newer = h.git.Commit(head, "more", map[string]string{"main.go": baseMain + "// TODO x\n// TODO y\n"})
	h.push("d-1", "opened", 5, base, head, "")
	h.wantPostedOnRetry(5)
	if !lost.Load() {
		t.Fatal("the check run's answer was never lost: the test tested nothing")
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	byHead := map[string]githubtest.CheckRun{}
	for _, cr := range runs {
		byHead[cr.HeadSHA] = cr
	}
	if len(runs) != 2 || len(byHead) != 2 {
		t.Fatalf("check runs: %+v (want one on each head)", runs)
	}
	if old := byHead[head]; old.Status != "completed" || old.Conclusion != ConclusionNeutral || old.Title != "Superseded" {
		t.Fatalf("the older head's run: %+v (want completed, neutral, superseded)", old)
	}
	if cur := byHead[newer]; cur.Status != "completed" {
		t.Fatalf("the newer head's run: %+v (want completed)", cur)
	}
	if rs := h.fake.Reviews("acme", "widgets", 5); len(rs) != 1 || rs[0].CommitID != newer {
		t.Fatalf("reviews: %+v (want one, on the newer head)", rs)
	}
}

// reviewerFunc is a Reviewer made of a function.
type reviewerFunc func(context.Context, ReviewInput) (*review.Report, error)

func (f reviewerFunc) Review(ctx context.Context, in ReviewInput) (*review.Report, error) {
	return f(ctx, in)
}

// TestHeadThatComesBackIsReviewed: a job's first attempt fails on one head, the pull
// request moves to another (the second attempt fails there too, completing the first
// head's run as superseded) and back (a force-push). The third attempt reviews and posts
// on that head: the superseded run is not taken for a finished review.
func TestHeadThatComesBackIsReviewed(t *testing.T) {
	var h *harness
	var base, head, other string
	var calls atomic.Int32
	rv := &scripted{}
	h = newHarness(t, harnessOptions{reviewer: reviewerFunc(func(ctx context.Context, in ReviewInput) (*review.Report, error) {
		switch calls.Add(1) {
		case 1:
			h.openPR(5, base, other)
			return nil, errors.New("model unavailable")
		case 2:
			h.openPR(5, base, head)
			return nil, errors.New("model unavailable")
		}
		return rv.Review(ctx, in)
	})})
	base = h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head = h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// TODO x\n"})
	other = h.git.Commit(head, "more", map[string]string{"main.go": baseMain + "// TODO y\n"})
	h.push("d-1", "opened", 5, base, head, "")
	if r := h.waitHistory(5, 1, 60*time.Second)[0]; r.Outcome != store.OutcomePosted || r.Attempt != 3 || r.HeadSHA != head {
		t.Fatalf("record: %+v (want posted on the third attempt, on the first head)", r)
	}
	if rs := h.fake.Reviews("acme", "widgets", 5); len(rs) != 1 || rs[0].CommitID != head {
		t.Fatalf("reviews: %+v (want one, on the first head)", rs)
	}
	for _, cr := range h.fake.CheckRuns("acme", "widgets") {
		if cr.Status != "completed" {
			t.Fatalf("check run left %s: %+v", cr.Status, cr)
		}
	}
}

// todos is a Go file with n TODO comments: n findings, one a line.
func todos(n int) string {
	var b strings.Builder
	b.WriteString("package main\n")
	for i := range n {
		fmt.Fprintf(&b, "// TODO item %d\n", i)
	}
	return b.String()
}

// wantPostedOnRetry waits for the pull request's review and fails unless it was posted by
// the job's second attempt.
func (h *harness) wantPostedOnRetry(number int) {
	h.t.Helper()
	if r := h.waitHistory(number, 1, 60*time.Second)[0]; r.Outcome != store.OutcomePosted || r.Attempt != 2 {
		h.t.Fatalf("record: %+v (want posted on the second attempt)", r)
	}
}

// TestManyFindings: annotations go in batches of 50 with the conclusion on the last; inline
// comments stop at 30 and the rest are folded into the review body.
func TestManyFindings(t *testing.T) {
	h := newHarness(t, harnessOptions{reviewer: &scripted{}})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"todo.go": todos(120)})
	h.openPR(2, base, head)
	h.deliver("pull_request", "d-1", h.prEvent("opened", 2, head, base, ""))
	h.waitHistory(2, 1, 30*time.Second)
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || len(runs[0].Annotations) != 120 || runs[0].Requests != 1+3 || runs[0].Conclusion != "success" {
		t.Fatalf("check run: %d annotations over %d requests, %s/%s", len(runs[0].Annotations), runs[0].Requests, runs[0].Status, runs[0].Conclusion)
	}
	reviews := h.fake.Reviews("acme", "widgets", 2)
	if len(reviews) != 1 || len(reviews[0].Comments) != 30 || !strings.Contains(reviews[0].Body, "90 more comment(s)") {
		t.Fatalf("review: %d inline comments; body:\n%.300s", len(reviews[0].Comments), reviews[0].Body)
	}
}

// annotationsAnswerLost is GitHub taking the check-run update that carries annotation batch
// number lose (from 1) but its answer never reaching the App, once.
type annotationsAnswerLost struct {
	RepoAPI
	lose  int
	seen  *atomic.Int32
	fired *atomic.Bool
}

func (r annotationsAnswerLost) UpdateCheckRun(ctx context.Context, id int64, o github.CheckRunOptions) (github.CheckRun, error) {
	cr, err := r.RepoAPI.UpdateCheckRun(ctx, id, o)
	if err == nil && len(o.Annotations) > 0 && int(r.seen.Add(1)) == r.lose && r.fired.CompareAndSwap(false, true) {
		return github.CheckRun{}, fmt.Errorf("update check run: %w", io.ErrUnexpectedEOF)
	}
	return cr, err
}

// TestAnnotationBatchNotSentTwice: GitHub adds each update's annotations to the run's, so
// an update whose answer was lost must not be sent again: the retry reads the run's
// annotation count and carries on after the batches it holds — a middle batch, and the
// last one (which also completes the run).
func TestAnnotationBatchNotSentTwice(t *testing.T) {
	for _, lose := range []int{2, 3} {
		t.Run(fmt.Sprintf("batch %d of 3", lose), func(t *testing.T) {
			fired := &atomic.Bool{}
			h := newHarness(t, harnessOptions{reviewer: &scripted{}, wrap: func(a RepoAPI) RepoAPI {
				return annotationsAnswerLost{RepoAPI: a, lose: lose, seen: &atomic.Int32{}, fired: fired}
			}})
			base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
			head := h.git.Commit(base, "change", map[string]string{"todo.go": todos(120)})
			h.push("d-1", "opened", 2, base, head, "")
			h.wantPostedOnRetry(2)
			if !fired.Load() {
				t.Fatal("no update's answer was lost: the test tested nothing")
			}
			runs := h.fake.CheckRuns("acme", "widgets")
			if len(runs) != 1 || len(runs[0].Annotations) != 120 || runs[0].Status != "completed" {
				t.Fatalf("check runs: %d, the first with %d annotations (want 120), %s", len(runs), len(runs[0].Annotations), runs[0].Status)
			}
			seen := map[string]bool{}
			for _, a := range runs[0].Annotations {
				if seen[a.Message] {
					t.Fatalf("annotation twice: %q", a.Message)
				}
				seen[a.Message] = true
			}
		})
	}
}

// TestPermanentFailureIsReportedOnce: a pull request GitHub does not know (404) is not
// retried: one failed history record, the job cancelled.
func TestPermanentFailureIsReportedOnce(t *testing.T) {
	rv := &scripted{}
	h := newHarness(t, harnessOptions{reviewer: rv, queue: store.QueueOptions{MaxAttempts: 5}})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// x\n"})
	// No AddPullRequest: GitHub answers 404.
	h.deliver("pull_request", "d-1", h.prEvent("opened", 9, head, base, ""))
	recs := h.waitHistory(9, 1, 20*time.Second)
	if recs[0].Outcome != store.OutcomeFailed || !strings.Contains(recs[0].Reason, "not found") {
		t.Fatalf("record: %+v", recs[0])
	}
	testkit.WaitFor(t, "the job to be cancelled", 10*time.Second, func() bool {
		jobs, _ := h.store.Jobs(context.Background())
		return len(jobs) == 1 && jobs[0].State == "cancelled" && jobs[0].Attempt == 1
	})
	if len(rv.calls()) != 0 {
		t.Fatal("the reviewer ran for a pull request that does not exist")
	}
}

// TestReviewerFailureGivesUpVisibly: a reviewer that keeps failing is retried up to the
// attempt limit; then the check run is completed (neutral, not left spinning) and the
// history says why.
func TestReviewerFailureGivesUpVisibly(t *testing.T) {
	rv := &scripted{err: fmt.Errorf("sandbox engine unreachable")}
	h := newHarness(t, harnessOptions{reviewer: rv, queue: store.QueueOptions{MaxAttempts: 3}})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// x\n"})
	h.openPR(4, base, head)
	h.deliver("pull_request", "d-1", h.prEvent("opened", 4, head, base, ""))
	recs := h.waitHistory(4, 1, 30*time.Second)
	if recs[0].Outcome != store.OutcomeFailed || recs[0].Attempt != 3 || !strings.Contains(recs[0].Reason, "sandbox engine unreachable") {
		t.Fatalf("record: %+v", recs[0])
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "neutral" {
		t.Fatalf("check run after giving up: %+v", runs)
	}
	if n := len(h.fake.Reviews("acme", "widgets", 4)); n != 0 {
		t.Fatalf("%d reviews posted by a failed job", n)
	}
}

// diffRefused is GitHub refusing to render a pull request's diff (406, too large).
type diffRefused struct{ RepoAPI }

func (r diffRefused) GetDiff(ctx context.Context, o github.DiffOptions) (github.Diff, error) {
	return github.Diff{}, fmt.Errorf("get pull request diff: %w", github.ErrTooLarge)
}

// TestDiffTooLargeIsNeutral: a pull request whose diff GitHub will not render is not
// passed green: the check is neutral and the summary says why.
func TestDiffTooLargeIsNeutral(t *testing.T) {
	rv := &scripted{}
	h := newHarness(t, harnessOptions{reviewer: rv, wrap: func(a RepoAPI) RepoAPI { return diffRefused{a} }})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "huge", map[string]string{"main.go": baseMain + "// FIXME\n"})
	h.openPR(6, base, head)
	h.deliver("pull_request", "d-1", h.prEvent("opened", 6, head, base, ""))
	if r := h.waitHistory(6, 1, 20*time.Second)[0]; r.Outcome != store.OutcomeNothingNew || r.Conclusion != ConclusionNeutral {
		t.Fatalf("record: %+v", r)
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Conclusion != "neutral" {
		t.Fatalf("check run: %+v", runs)
	}
	if s := h.fake.IssueComments("acme", "widgets", 6); len(s) != 1 || !strings.Contains(s[0].Body, "too large") {
		t.Fatalf("summary: %+v", s)
	}
	if len(rv.calls()) != 0 {
		t.Fatal("the reviewer ran without a diff")
	}
}

// placementRefused is GitHub refusing a review's inline comments (422, a line it will not
// place), while it takes a review without any.
type placementRefused struct{ RepoAPI }

func (r placementRefused) CreateReview(ctx context.Context, number int, rev github.NewReview) (github.Review, error) {
	if len(rev.Comments) > 0 {
		return github.Review{}, fmt.Errorf("post review: %w", github.ErrInvalid)
	}
	return r.RepoAPI.CreateReview(ctx, number, rev)
}

// TestRefusedPlacementFoldsIntoBody: when GitHub refuses the inline comments, the review is
// still posted, once, with every comment listed in its body under its fingerprint; the next
// push's review lists only what is new.
func TestRefusedPlacementFoldsIntoBody(t *testing.T) {
	rv := &scripted{}
	h := newHarness(t, harnessOptions{reviewer: rv, wrap: func(a RepoAPI) RepoAPI { return placementRefused{a} }})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head1 := h.git.Commit(base, "one", map[string]string{"main.go": baseMain + "\n// TODO one\nfunc one() {} // BUG one\n"})
	h.push("d-1", "opened", 9, base, head1, "")
	if r := h.waitHistory(9, 1, 20*time.Second)[0]; r.Outcome != store.OutcomePosted || r.InlineComments != 0 {
		t.Fatalf("record: %+v", r)
	}
	revs := h.fake.Reviews("acme", "widgets", 9)
	if len(revs) != 1 || len(revs[0].Comments) != 0 {
		t.Fatalf("reviews: %+v", revs)
	}
	first := fingerprintsOf(revs[0].Body)
	// The TODO finding and the model's comment on the BUG line.
	if len(first) != 2 || !strings.Contains(revs[0].Body, "TODO left in") || !strings.Contains(revs[0].Body, "This line looks wrong") {
		t.Fatalf("folded body (%d fingerprints):\n%s", len(first), revs[0].Body)
	}

	head2 := h.git.Commit(head1, "two", map[string]string{"main.go": baseMain + "\n// TODO one\nfunc one() {} // BUG one\n// TODO two\n"})
	h.push("d-2", "synchronize", 9, base, head2, head1)
	h.waitHistory(9, 2, 20*time.Second)
	revs = h.fake.Reviews("acme", "widgets", 9)
	if len(revs) != 2 || len(revs[1].Comments) != 0 {
		t.Fatalf("reviews after the push: %+v", revs)
	}
	second := fingerprintsOf(revs[1].Body)
	if len(second) != 1 || slices.Contains(first, second[0]) || !strings.Contains(revs[1].Body, "TODO left in: // TODO two") {
		t.Fatalf("second folded body repeats or misses a comment (%v, first %v):\n%s", second, first, revs[1].Body)
	}
}

// pushDuringDiff moves the pull request to another head just before the first read of its
// diff by number: a push landing between the worker's read of the pull request and of its
// diff.
type pushDuringDiff struct {
	RepoAPI
	once *sync.Once
	push func()
}

func (p pushDuringDiff) GetDiff(ctx context.Context, o github.DiffOptions) (github.Diff, error) {
	if o.Number != 0 {
		p.once.Do(p.push)
	}
	return p.RepoAPI.GetDiff(ctx, o)
}

// TestPushDuringDiffRead: a push between reading the pull request and reading its diff never
// pairs one head's check run and snapshot with the other head's diff: the attempt gives way,
// the retry reviews the new head, and the older head's check run is closed as superseded.
func TestPushDuringDiffRead(t *testing.T) {
	rv := &scripted{}
	var (
		once        sync.Once
		h           *harness
		base, head2 string
		moved       atomic.Bool
	)
	h = newHarness(t, harnessOptions{reviewer: rv, wrap: func(a RepoAPI) RepoAPI {
		return pushDuringDiff{RepoAPI: a, once: &once, push: func() { h.openPR(5, base, head2); moved.Store(true) }}
	}})
	base = h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head1 := h.git.Commit(base, "one", map[string]string{"main.go": baseMain + "// TODO one\n"})
	head2 = h.git.Commit(head1, "two", map[string]string{"main.go": baseMain + "// TODO one\n// TODO two\n"})
	h.push("d-1", "opened", 5, base, head1, "")
	var posted store.ReviewRecord
	testkit.WaitFor(t, "a posted review", 30*time.Second, func() bool {
		for _, r := range h.history(5) {
			if r.Outcome == store.OutcomePosted {
				posted = r
				return true
			}
		}
		return false
	})
	if !moved.Load() || posted.HeadSHA != head2 {
		t.Fatalf("posted %+v (moved %v), want the review of %s", posted, moved.Load(), head2[:7])
	}
	for _, in := range rv.calls() {
		if in.Head.SHA != head2 || !strings.Contains(string(in.Diff), "+// TODO two") {
			t.Errorf("the reviewer was given head %s with a diff that does not match it:\n%s", review.ShortSHA(in.Head.SHA), in.Diff)
		}
	}
	for _, r := range h.fake.Reviews("acme", "widgets", 5) {
		if r.CommitID != head2 {
			t.Errorf("review posted on %s, want %s", review.ShortSHA(r.CommitID), head2[:7])
		}
	}
	for _, run := range h.fake.CheckRuns("acme", "widgets") {
		if run.HeadSHA == head1 && (run.Status != "completed" || run.Title != "Superseded") {
			t.Errorf("the older head's check run: %+v, want completed as superseded", run)
		}
	}
}

// checkRunUpdates records what each update of a check run said.
type checkRunUpdates struct {
	RepoAPI
	mu   *sync.Mutex
	seen *[]github.CheckRunOptions
}

func (c checkRunUpdates) UpdateCheckRun(ctx context.Context, id int64, o github.CheckRunOptions) (github.CheckRun, error) {
	c.mu.Lock()
	*c.seen = append(*c.seen, o)
	c.mu.Unlock()
	return c.RepoAPI.UpdateCheckRun(ctx, id, o)
}

// TestRetryShownOnTheCheckRun: a failed attempt that is retried says so on the check run,
// with the attempt and the reason, instead of leaving "Reviewing" up through the backoff;
// the last attempt completes it as neutral.
func TestRetryShownOnTheCheckRun(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []github.CheckRunOptions
	)
	rv := &scripted{err: fmt.Errorf("sandbox engine unreachable")}
	h := newHarness(t, harnessOptions{reviewer: rv, queue: store.QueueOptions{MaxAttempts: 2},
		wrap: func(a RepoAPI) RepoAPI { return checkRunUpdates{RepoAPI: a, mu: &mu, seen: &seen} }})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// x\n"})
	h.openPR(6, base, head)
	h.deliver("pull_request", "d-1", h.prEvent("opened", 6, head, base, ""))
	if r := h.waitHistory(6, 1, 30*time.Second)[0]; r.Outcome != store.OutcomeFailed || r.Attempt != 2 {
		t.Fatalf("record: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d check run updates, want the retry notice and the neutral end: %+v", len(seen), seen)
	}
	if u := seen[0]; u.Status != "in_progress" || u.Title != "Retrying" || !strings.Contains(u.Summary, "Attempt 1 of 2") ||
		!strings.Contains(u.Summary, "sandbox engine unreachable") {
		t.Errorf("the retry's update: %+v", u)
	}
	if u := seen[1]; u.Status != "completed" || u.Conclusion != ConclusionNeutral {
		t.Errorf("the last update: %+v", u)
	}
}

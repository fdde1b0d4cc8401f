package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/store/storetest"
	"github.com/asterhq/aster/internal/testkit"
)

// backends runs fn once on SQLite and, when ASTER_TEST_POSTGRES_URL is set (see
// scripts/postgres-test.sh), once on Postgres in a schema of its own. open returns a new
// Store on the same database each time it is called (a restart, or a second replica).
func backends(t *testing.T, fn func(t *testing.T, open func(Options) *Store)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "aster.db")
		fn(t, func(o Options) *Store {
			t.Helper()
			o.Path = path
			return openTest(t, o)
		})
	})
	t.Run("postgres", func(t *testing.T) {
		u := PostgresTestURL(t)
		t.Parallel()
		fn(t, func(o Options) *Store {
			t.Helper()
			o.URL = u
			return openTest(t, o)
		})
	})
}

func openTest(t *testing.T, o Options) *Store {
	t.Helper()
	q := o.Queue
	if q.PollInterval == 0 {
		q.PollInterval = 50 * time.Millisecond
	}
	if q.RetryBase == 0 {
		q.RetryBase, q.RetryMax = 20*time.Millisecond, 100*time.Millisecond
	}
	if q.BusySnooze == 0 {
		q.BusySnooze = 100 * time.Millisecond
	}
	if q.ClientID == "" {
		q.ClientID = "test-" + randHex(4)
	}
	o.Queue = q
	s, err := Open(t.Context(), o)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// PostgresTestURL is storetest.PostgresURL (skips without ASTER_TEST_POSTGRES_URL).
func PostgresTestURL(t *testing.T) string { return storetest.PostgresURL(t) }

func request(delivery string, pr int, head string) ReviewRequest {
	return ReviewRequest{
		Delivery:       Delivery{ID: delivery, Event: "pull_request", Action: "synchronize", Repo: "acme/widgets", Number: pr, HeadSHA: head},
		Pull:           PullKey{Owner: "acme", Repo: "widgets", Number: pr},
		InstallationID: 99,
		HeadSHA:        head,
	}
}

func TestDuplicateDeliveryIsOneJob(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{})
		ctx := t.Context()
		first, err := s.RequestReview(ctx, request("d-1", 7, "aaa"))
		if err != nil || first.JobID == 0 || first.Coalesced {
			t.Fatalf("first delivery: %+v, %v", first, err)
		}
		if _, err := s.RequestReview(ctx, request("d-1", 7, "aaa")); !errors.Is(err, ErrDuplicateDelivery) {
			t.Fatalf("second delivery with the same id: err = %v, want ErrDuplicateDelivery", err)
		}
		// The duplicate must not have touched anything, even with another payload.
		other := request("d-1", 8, "bbb")
		if _, err := s.RequestReview(ctx, other); !errors.Is(err, ErrDuplicateDelivery) {
			t.Fatalf("same id, other pull request: err = %v", err)
		}
		if _, ok, _ := s.Pull(ctx, other.Pull); ok {
			t.Fatal("a duplicate delivery created a pull request row")
		}
		jobs, err := s.Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 1 {
			t.Fatalf("jobs = %d, want 1: %+v", len(jobs), jobs)
		}
	})
}

func TestNewerHeadFoldsIntoTheWaitingJob(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{})
		ctx := t.Context()
		a, err := s.RequestReview(ctx, request("d-1", 7, "aaa"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.RequestReview(ctx, request("d-2", 7, "bbb"))
		if err != nil {
			t.Fatal(err)
		}
		if !b.Coalesced || b.JobID != a.JobID {
			t.Fatalf("second push: %+v, want coalesced into job %d", b, a.JobID)
		}
		other, err := s.RequestReview(ctx, request("d-3", 8, "ccc"))
		if err != nil || other.Coalesced || other.JobID == a.JobID {
			t.Fatalf("another pull request: %+v, %v", other, err)
		}
		p, ok, err := s.Pull(ctx, PullKey{"acme", "widgets", 7})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if p.RequestedSHA != "bbb" || p.WaitingJob != a.JobID {
			t.Fatalf("pull state %+v: want requested bbb, waiting %d", p, a.JobID)
		}
		jobs, _ := s.Jobs(ctx)
		if len(jobs) != 2 {
			t.Fatalf("jobs = %d, want 2", len(jobs))
		}
	})
}

// TestOneRunningOneWaiting pushes to one pull request while its review runs: the second
// review waits (never runs beside the first), later pushes fold into it, and it runs once
// the first has finished.
func TestOneRunningOneWaiting(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{Queue: QueueOptions{Workers: 4}})
		ctx := t.Context()
		var running, maxRunning, runs atomic.Int32
		release := make(chan struct{})
		started := make(chan int64, 10)
		seen := make(chan string, 10)
		err := s.Start(ctx, func(ctx context.Context, j *Job) error {
			c, err := j.Claim(ctx)
			if err != nil {
				return err
			}
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
			runs.Add(1)
			started <- j.ID
			seen <- c.RequestedSHA
			if runs.Load() == 1 {
				<-release
			}
			return j.Finish(ctx, Finish{ReviewedSHA: c.RequestedSHA, Record: &ReviewRecord{Pull: j.Pull, HeadSHA: c.RequestedSHA, Outcome: OutcomePosted, JobID: j.ID}})
		})
		if err != nil {
			t.Fatal(err)
		}
		first, _ := s.RequestReview(ctx, request("d-1", 7, "aaa"))
		if id := <-started; id != first.JobID {
			t.Fatalf("started job %d, want %d", id, first.JobID)
		}
		second, err := s.RequestReview(ctx, request("d-2", 7, "bbb"))
		if err != nil || second.Coalesced {
			t.Fatalf("push during the run: %+v, %v (want a new waiting job)", second, err)
		}
		third, err := s.RequestReview(ctx, request("d-3", 7, "ccc"))
		if err != nil || !third.Coalesced || third.JobID != second.JobID {
			t.Fatalf("second push during the run: %+v, %v (want folded into %d)", third, err, second.JobID)
		}
		time.Sleep(400 * time.Millisecond) // the waiting job is fetched, finds the lease taken, snoozes
		if runs.Load() != 1 {
			t.Fatalf("%d runs while the first holds the pull request", runs.Load())
		}
		close(release)
		testkit.WaitFor(t, "the waiting job to run", 10*time.Second, func() bool { return runs.Load() == 2 })
		<-seen
		if sha := <-seen; sha != "ccc" {
			t.Fatalf("the waiting job reviewed %q, want the newest head ccc", sha)
		}
		if maxRunning.Load() != 1 {
			t.Fatalf("%d jobs of one pull request ran at once", maxRunning.Load())
		}
		testkit.WaitFor(t, "two history records", 5*time.Second, func() bool {
			h, _ := s.History(ctx, HistoryFilter{Repository: "acme/widgets", Number: 7})
			return len(h) == 2
		})
		p, _, _ := s.Pull(ctx, PullKey{"acme", "widgets", 7})
		if p.LastReviewedSHA != "ccc" || p.RunningJob != 0 || p.WaitingJob != 0 {
			t.Fatalf("pull state after both runs: %+v", p)
		}
	})
}

func TestRetryThenPermanent(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{Queue: QueueOptions{MaxAttempts: 5}})
		ctx := t.Context()
		var attempts sync.Map
		done := make(chan int64, 4)
		err := s.Start(ctx, func(ctx context.Context, j *Job) error {
			if _, err := j.Claim(ctx); err != nil {
				return err
			}
			n, _ := attempts.LoadOrStore(j.Pull.Number, new(atomic.Int32))
			a := n.(*atomic.Int32).Add(1)
			switch {
			case j.Pull.Number == 1 && a < 3:
				return fmt.Errorf("github unavailable (attempt %d)", j.Attempt)
			case j.Pull.Number == 2:
				defer func() { done <- j.ID }()
				return Permanent(errors.New("not found"))
			}
			defer func() { done <- j.ID }()
			return j.Finish(ctx, Finish{ReviewedSHA: "x"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.RequestReview(ctx, request("d-1", 1, "aaa")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RequestReview(ctx, request("d-2", 2, "aaa")); err != nil {
			t.Fatal(err)
		}
		<-done
		<-done
		testkit.WaitFor(t, "jobs to settle", 5*time.Second, func() bool {
			jobs, _ := s.Jobs(ctx)
			states := map[int]string{}
			for _, j := range jobs {
				states[j.Pull.Number] = j.State
			}
			return states[1] == "completed" && states[2] == "cancelled"
		})
		n, _ := attempts.Load(1)
		if got := n.(*atomic.Int32).Load(); got != 3 {
			t.Fatalf("pull 1 ran %d times, want 3 (two failures, then success)", got)
		}
		n, _ = attempts.Load(2)
		if got := n.(*atomic.Int32).Load(); got != 1 {
			t.Fatalf("pull 2 ran %d times after a permanent error, want 1", got)
		}
		// The failures released the lease each time.
		p, _, _ := s.Pull(ctx, PullKey{"acme", "widgets", 2})
		if p.RunningJob != 0 {
			t.Fatalf("lease left behind: %+v", p)
		}
	})
}

func TestRunProgressAndHistory(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{})
		ctx := t.Context()
		k := PullKey{"acme", "widgets", 3}
		if _, ok, err := s.Run(ctx, k, "h1"); ok || err != nil {
			t.Fatalf("run before any save: %v %v", ok, err)
		}
		run := Run{Pull: k, HeadSHA: "h1", SinceSHA: "h0", CheckRunID: 42}
		if err := s.SaveRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		run.Result, run.ReviewPosted, run.ReviewID = []byte(`{"a":1}`), true, 7
		if err := s.SaveRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.Run(ctx, k, "h1")
		if err != nil || !ok || string(got.Result) != `{"a":1}` || !got.ReviewPosted || got.ReviewID != 7 ||
			got.CheckRunID != 42 || got.SinceSHA != "h0" || got.CheckDone {
			t.Fatalf("run = %+v, %v, %v", got, ok, err)
		}
		stale, err := s.OpenCheckRuns(ctx, k, "h2")
		if err != nil || len(stale) != 1 || stale[0].HeadSHA != "h1" {
			t.Fatalf("open check runs = %+v, %v", stale, err)
		}
		if stale, _ := s.OpenCheckRuns(ctx, k, "h1"); len(stale) != 0 {
			t.Fatalf("the current head is not a superseded run: %+v", stale)
		}
		if err := s.SaveRun(ctx, Run{Pull: k, HeadSHA: "h3", JobID: 9}); err != nil {
			t.Fatal(err)
		}
		stale, _ = s.OpenCheckRuns(ctx, k, "h2")
		if len(stale) != 2 || !slices.ContainsFunc(stale, func(r Run) bool { return r.HeadSHA == "h3" && r.CheckRunID == 0 && r.JobID == 9 }) {
			t.Fatalf("a run saved before its check run was created is open too: %+v", stale)
		}
		if err := s.SaveRun(ctx, Run{Pull: k, HeadSHA: "h3", JobID: 9, CheckDone: true}); err != nil {
			t.Fatal(err)
		}
		if stale, _ := s.OpenCheckRuns(ctx, k, "h2"); len(stale) != 1 {
			t.Fatalf("a completed run is not open: %+v", stale)
		}

		for i, outcome := range []string{OutcomePosted, OutcomeSkipped, OutcomeFailed} {
			rec := &ReviewRecord{Pull: PullKey{"acme", "widgets", 3 + i%2}, HeadSHA: fmt.Sprint("h", i), Outcome: outcome,
				InputTokens: 100, OutputTokens: 20, CostUSD: 0.25, DurationsMS: map[string]int64{"gate": 12},
				StartedAt: time.Now().Add(-time.Second), FinishedAt: time.Now().Add(time.Duration(i) * time.Millisecond)}
			if err := s.AddReview(ctx, rec); err != nil || rec.ID == 0 {
				t.Fatal(rec.ID, err)
			}
		}
		all, err := s.History(ctx, HistoryFilter{})
		if err != nil || len(all) != 3 {
			t.Fatalf("history = %d records, %v", len(all), err)
		}
		if all[0].Outcome != OutcomeFailed || all[0].Repository != "acme/widgets" || all[0].CostUSD != 0.25 ||
			all[0].DurationsMS["gate"] != 12 || all[0].DurationMS < 900 {
			t.Fatalf("newest record = %+v", all[0])
		}
		pr3, _ := s.History(ctx, HistoryFilter{Repository: "acme/widgets", Number: 3})
		if len(pr3) != 2 {
			t.Fatalf("history of #3 = %d records, want 2", len(pr3))
		}
		failed, _ := s.History(ctx, HistoryFilter{Outcome: OutcomeFailed, Limit: 1})
		if len(failed) != 1 || failed[0].HeadSHA != "h2" {
			t.Fatalf("failed = %+v", failed)
		}
	})
}

func TestInstallationRecorded(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{})
		ctx := t.Context()
		d := Delivery{ID: "i-1", Event: "installation", Action: "created"}
		in := Installation{ID: 5, Action: "created", Account: "acme", Repositories: []string{"acme/widgets"}, Sender: "octocat"}
		if err := s.RecordInstallation(ctx, d, in); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordInstallation(ctx, d, in); !errors.Is(err, ErrDuplicateDelivery) {
			t.Fatalf("duplicate: %v", err)
		}
		in.Action, in.Repositories = "suspend", nil
		if err := s.RecordInstallation(ctx, Delivery{ID: "i-2", Event: "installation", Action: "suspend"}, in); err != nil {
			t.Fatal(err)
		}
		var action, repos string
		if err := s.db.QueryRow(ctx, `SELECT action, repositories FROM aster_installations WHERE installation_id = 5`).Scan(&action, &repos); err != nil {
			t.Fatal(err)
		}
		if action != "suspend" || repos != `["acme/widgets"]` {
			t.Fatalf("installation = %s %s", action, repos)
		}
	})
}

func TestSQLiteSingleWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aster.db")
	s := openTest(t, Options{Path: path})
	if _, err := Open(t.Context(), Options{Path: path}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	// A reader (aster app history) may open it alongside.
	r, err := Open(t.Context(), Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open beside the server: %v", err)
	}
	defer r.Close()
	if _, err := r.History(t.Context(), HistoryFilter{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := Open(t.Context(), Options{Path: path})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s2.Close()
}

// TestTwoReplicas runs two stores (two processes' worth of River clients) on one Postgres
// database: every request is reviewed, and jobs of one pull request never overlap.
func TestTwoReplicas(t *testing.T) {
	u := PostgresTestURL(t)
	ctx := t.Context()
	a := openTest(t, Options{URL: u, Queue: QueueOptions{ClientID: "replica-a", Workers: 3}})
	b := openTest(t, Options{URL: u, Queue: QueueOptions{ClientID: "replica-b", Workers: 3}})
	var mu sync.Mutex
	active := map[int]int{}
	overlap := false
	byReplica := map[string]int{}
	reviewed := map[int]string{}
	handler := func(name string) Handler {
		return func(ctx context.Context, j *Job) error {
			c, err := j.Claim(ctx)
			if err != nil {
				return err
			}
			mu.Lock()
			active[j.Pull.Number]++
			overlap = overlap || active[j.Pull.Number] > 1
			byReplica[name]++
			mu.Unlock()
			time.Sleep(200 * time.Millisecond)
			mu.Lock()
			active[j.Pull.Number]--
			reviewed[j.Pull.Number] = c.RequestedSHA
			mu.Unlock()
			return j.Finish(ctx, Finish{ReviewedSHA: c.RequestedSHA})
		}
	}
	if err := a.Start(ctx, handler("a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx, handler("b")); err != nil {
		t.Fatal(err)
	}
	const prs, pushes = 8, 5
	var wg sync.WaitGroup
	for pr := 1; pr <= prs; pr++ {
		for push := 1; push <= pushes; push++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := a
				if push%2 == 0 {
					s = b
				}
				if _, err := s.RequestReview(ctx, request(fmt.Sprintf("d-%d-%d", pr, push), pr, fmt.Sprint("sha", push))); err != nil {
					t.Error(err)
				}
			}()
			time.Sleep(5 * time.Millisecond)
		}
	}
	wg.Wait()
	testkit.WaitFor(t, "every pull request reviewed at its last push", 30*time.Second, func() bool {
		for pr := 1; pr <= prs; pr++ {
			p, _, _ := a.Pull(ctx, PullKey{"acme", "widgets", pr})
			if p.WaitingJob != 0 || p.RunningJob != 0 || p.LastReviewedSHA == "" {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Fatal("two jobs of one pull request ran at the same time")
	}
	t.Logf("runs by replica: %v", byReplica)
}

// TestReplicasMigrateTogether starts three replicas at once on an empty Postgres schema:
// the migrations run once, under the advisory lock, and every replica opens.
func TestReplicasMigrateTogether(t *testing.T) {
	u := PostgresTestURL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(t.Context(), Options{URL: u, Queue: QueueOptions{ClientID: fmt.Sprint("replica-", i)}})
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("replica start-up: %v", err)
	}
	s := openTest(t, Options{URL: u})
	var n int
	if err := s.db.QueryRow(t.Context(), `SELECT COUNT(*) FROM aster_migrations`).Scan(&n); err != nil || n != len(migrations) {
		t.Fatalf("migrations recorded: %d (%v), want %d", n, err, len(migrations))
	}
}

func command(delivery string, pr int, comment int64, updated time.Time) ReviewRequest {
	return ReviewRequest{
		Delivery:       Delivery{ID: delivery, Event: "issue_comment", Action: "created", Repo: "acme/widgets", Number: pr},
		Pull:           PullKey{Owner: "acme", Repo: "widgets", Number: pr},
		InstallationID: 99,
		Force:          true,
		By:             "maintainer",
		Command:        &Command{CommentID: comment, UpdatedAt: updated},
	}
}

// TestReplayedCommandRunsOnce is SECURITY H6 at the store: a command comment replayed under
// new delivery ids (or its id re-cased) after its review ran adds no job; an edit (a new
// updated_at) is a new command; delivery ids compare case-insensitively.
func TestReplayedCommandRunsOnce(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{})
		ctx := t.Context()
		var runs atomic.Int32
		if err := s.Start(ctx, func(ctx context.Context, j *Job) error {
			c, err := j.Claim(ctx)
			if err != nil {
				return err
			}
			runs.Add(1)
			return j.Finish(ctx, Finish{ForceHandled: c.Force, Record: &ReviewRecord{Pull: j.Pull, Outcome: OutcomePosted, JobID: j.ID}})
		}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2019, 5, 15, 15, 20, 21, 0, time.UTC)
		first, err := s.RequestReview(ctx, command("72d3162e-cc78-11e3-81ab-4c9367dc0958", 7, 492700400, t0))
		if err != nil || first.JobID == 0 {
			t.Fatalf("command: %+v, %v", first, err)
		}
		testkit.WaitFor(t, "the command's run", 10*time.Second, func() bool { return runs.Load() == 1 })
		testkit.WaitFor(t, "the run to finish", 10*time.Second, func() bool {
			p, _, _ := s.Pull(ctx, PullKey{"acme", "widgets", 7})
			return p.RunningJob == 0
		})
		for _, id := range []string{"replay-1", "replay-2", "replay-3"} {
			if _, err := s.RequestReview(ctx, command(id, 7, 492700400, t0)); !errors.Is(err, ErrDuplicateCommand) {
				t.Fatalf("replay under %s: err = %v, want ErrDuplicateCommand", id, err)
			}
		}
		if _, err := s.RequestReview(ctx, command("72D3162E-CC78-11E3-81AB-4C9367DC0958", 7, 1, t0)); !errors.Is(err, ErrDuplicateDelivery) {
			t.Fatalf("re-cased delivery id: err = %v, want ErrDuplicateDelivery", err)
		}
		jobs, _ := s.Jobs(ctx)
		if len(jobs) != 1 {
			t.Fatalf("jobs after replays: %d, want 1", len(jobs))
		}
		edit, err := s.RequestReview(ctx, command("edit-1", 7, 492700400, t0.Add(time.Second)))
		if err != nil || edit.JobID == 0 || edit.JobID == first.JobID {
			t.Fatalf("edited command: %+v, %v (want a new job)", edit, err)
		}
		testkit.WaitFor(t, "the edit's run", 10*time.Second, func() bool { return runs.Load() == 2 })
		if _, err := s.RequestReview(ctx, command("edit-replay", 7, 492700400, t0.Add(time.Second))); !errors.Is(err, ErrDuplicateCommand) {
			t.Fatalf("replayed edit: err = %v, want ErrDuplicateCommand", err)
		}
		c, err := s.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Commands != 2 || c.Deliveries != 2 {
			t.Fatalf("counts %+v: want 2 commands, 2 deliveries", c)
		}
		time.Sleep(200 * time.Millisecond)
		if n := runs.Load(); n != 2 {
			t.Fatalf("%d runs, want 2 (the command and its edit)", n)
		}
	})
}

// TestReplayedHeadFoldsIntoItsJob is SECURITY H6 for pull request events: the same head
// announced again under a new delivery id while its job runs joins that job, after it was
// reviewed adds nothing; a new head still gets a job.
func TestReplayedHeadFoldsIntoItsJob(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{})
		ctx := t.Context()
		release := make(chan struct{})
		var runs atomic.Int32
		if err := s.Start(ctx, func(ctx context.Context, j *Job) error {
			c, err := j.Claim(ctx)
			if err != nil {
				return err
			}
			if runs.Add(1) == 1 {
				<-release
			}
			return j.Finish(ctx, Finish{ReviewedSHA: c.RequestedSHA, Record: &ReviewRecord{Pull: j.Pull, HeadSHA: c.RequestedSHA, Outcome: OutcomePosted, JobID: j.ID}})
		}); err != nil {
			t.Fatal(err)
		}
		first, err := s.RequestReview(ctx, request("d-open", 7, "aaa"))
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the job to claim", 10*time.Second, func() bool {
			p, _, _ := s.Pull(ctx, PullKey{"acme", "widgets", 7})
			return p.RunningJob == first.JobID
		})
		during, err := s.RequestReview(ctx, request("replay-during", 7, "aaa"))
		if err != nil || !during.Coalesced || during.JobID != first.JobID {
			t.Fatalf("replay during the run: %+v, %v (want folded into running job %d)", during, err, first.JobID)
		}
		close(release)
		testkit.WaitFor(t, "the review to finish", 10*time.Second, func() bool {
			p, _, _ := s.Pull(ctx, PullKey{"acme", "widgets", 7})
			return p.LastReviewedSHA == "aaa" && p.RunningJob == 0
		})
		after, err := s.RequestReview(ctx, request("replay-after", 7, "aaa"))
		if err != nil || !after.Reviewed || after.JobID != 0 {
			t.Fatalf("replay after the review: %+v, %v (want already reviewed, no job)", after, err)
		}
		if jobs, _ := s.Jobs(ctx); len(jobs) != 1 {
			t.Fatalf("jobs after replays: %d, want 1", len(jobs))
		}
		push, err := s.RequestReview(ctx, request("d-push", 7, "bbb"))
		if err != nil || push.JobID == 0 || push.Coalesced || push.Reviewed {
			t.Fatalf("a new head: %+v, %v (want a new job)", push, err)
		}
		testkit.WaitFor(t, "the new head's review", 10*time.Second, func() bool { return runs.Load() == 2 })
	})
}

// TestReopenedDuringARunQueues: reopened (or ready_for_review) for the head a job is running
// on queues a job rather than joining it: the running job may be skipping the pull request
// because it was closed (or a draft) when it looked.
func TestReopenedDuringARunQueues(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{})
		ctx := t.Context()
		release := make(chan struct{})
		if err := s.Start(ctx, func(ctx context.Context, j *Job) error {
			if _, err := j.Claim(ctx); err != nil {
				return err
			}
			<-release
			return j.Finish(ctx, Finish{Record: &ReviewRecord{Pull: j.Pull, Outcome: OutcomeSkipped, JobID: j.ID}})
		}); err != nil {
			t.Fatal(err)
		}
		defer close(release)
		first, err := s.RequestReview(ctx, request("d-1", 7, "aaa"))
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the job to claim", 10*time.Second, func() bool {
			p, _, _ := s.Pull(ctx, PullKey{"acme", "widgets", 7})
			return p.RunningJob == first.JobID
		})
		r := request("d-reopened", 7, "aaa")
		r.Delivery.Action = "reopened"
		got, err := s.RequestReview(ctx, r)
		if err != nil || got.Coalesced || got.JobID == 0 || got.JobID == first.JobID {
			t.Fatalf("reopened during the run: %+v, %v (want a new waiting job)", got, err)
		}
	})
}

// TestClaimSaysWhetherAnEventAsked: a claim's Announced is true when a pull_request delivery
// queued the job or was coalesced into it, whichever came first, and false for a job only
// commands asked for (SECURITY.md O3: a refused command then leaves it nothing to do).
func TestClaimSaysWhetherAnEventAsked(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{})
		ctx := t.Context()
		t0 := time.Date(2019, 5, 15, 15, 20, 21, 0, time.UTC)
		// Every request is in before the worker starts, so each pair shares one job.
		for _, r := range []ReviewRequest{
			command("c-only", 1, 101, t0),
			command("c-first", 2, 102, t0), request("e-second", 2, "bbb"),
			request("e-first", 3, "ccc"), command("c-second", 3, 103, t0),
		} {
			if _, err := s.RequestReview(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		announced := map[int]bool{}
		if err := s.Start(ctx, func(ctx context.Context, j *Job) error {
			c, err := j.Claim(ctx)
			if err != nil {
				return err
			}
			mu.Lock()
			announced[j.Pull.Number] = c.Announced
			mu.Unlock()
			return j.Finish(ctx, Finish{ForceHandled: c.Force, Record: &ReviewRecord{Pull: j.Pull, Outcome: OutcomeSkipped, JobID: j.ID}})
		}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "three claims", 10*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(announced) == 3
		})
		mu.Lock()
		defer mu.Unlock()
		if want := map[int]bool{1: false, 2: true, 3: true}; fmt.Sprint(announced) != fmt.Sprint(want) {
			t.Fatalf("announced by pull request: %v, want %v", announced, want)
		}
	})
}

// TestUpgradeLowerCasesDeliveryIDs: a database of schema 1 whose delivery ids differ only in
// case (a replay the old version accepted) keeps one of each, lower-cased, so the replay is
// a duplicate after the upgrade.
func TestUpgradeLowerCasesDeliveryIDs(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		ctx := t.Context()
		s := open(Options{})
		// Back to schema 1: without what migrations 2 to 5 add, with ids of mixed case.
		for _, q := range []string{
			`DROP TABLE aster_dismissals`,
			`DROP INDEX aster_deliveries_job`,
			`DROP TABLE aster_commands`,
			`ALTER TABLE aster_pulls DROP COLUMN running_sha`,
			`ALTER TABLE aster_pulls DROP COLUMN paused_by`,
			`ALTER TABLE aster_pulls DROP COLUMN paused_at`,
			`ALTER TABLE aster_pulls DROP COLUMN threads_seq`,
			`ALTER TABLE aster_pulls DROP COLUMN threads_done`,
			`DELETE FROM aster_migrations WHERE version >= 2`,
			`INSERT INTO aster_deliveries (delivery_id, event, outcome, received_at) VALUES
				('72D3162E-cc78', 'issue_comment', 'queued', 1), ('72d3162e-cc78', 'issue_comment', 'queued', 2),
				('72d3162e-CC78', 'issue_comment', 'queued', 3), ('Other-1', 'pull_request', 'queued', 4)`,
		} {
			if _, err := s.db.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		s.Close()
		s = open(Options{})
		rows, err := s.db.Query(ctx, `SELECT delivery_id FROM aster_deliveries ORDER BY delivery_id`)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if fmt.Sprint(ids) != "[72d3162e-cc78 other-1]" {
			t.Fatalf("delivery ids after the upgrade: %v", ids)
		}
		if _, err := s.RequestReview(ctx, request("72D3162E-CC78", 7, "aaa")); !errors.Is(err, ErrDuplicateDelivery) {
			t.Fatalf("a re-cased id after the upgrade: err = %v, want ErrDuplicateDelivery", err)
		}
		if _, err := s.db.Exec(ctx, `DROP INDEX aster_deliveries_job`); err != nil {
			t.Fatalf("migration 3's index after the upgrade: %v", err)
		}
	})
}

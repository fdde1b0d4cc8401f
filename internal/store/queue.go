package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// QueueOptions tune the job queue. Zero fields take the Default* constants
// (defaults.go; withDefaults applies them).
type QueueOptions struct {
	// ClientID names this process among the ones sharing the database (River's client id;
	// default: the host name). At start-up, jobs a previous process with the same id left
	// running are run again at once: two live processes must never share one.
	ClientID string
	// Workers is how many reviews run at once in this process.
	Workers int
	// JobTimeout cancels a review running longer.
	JobTimeout time.Duration
	// RescueAfter: a job another process left running this long is run again (its process
	// is presumed dead). Default JobTimeout + 5m.
	RescueAfter time.Duration
	// MaxAttempts per job, retries included.
	MaxAttempts int
	// RetryBase and RetryMax bound the exponential backoff between attempts.
	RetryBase, RetryMax time.Duration
	// Lease is how long a job's claim on its pull request lasts without a heartbeat.
	Lease time.Duration
	// BusySnooze is how long a job waits when another job of its pull request runs.
	BusySnooze time.Duration
	// PollInterval is how often idle workers look for jobs (SQLite has no notifications
	// across processes; jobs inserted by this process are picked up at once).
	PollInterval time.Duration
}

func (q QueueOptions) withDefaults() QueueOptions {
	if q.ClientID == "" {
		q.ClientID, _ = os.Hostname()
		if q.ClientID == "" {
			q.ClientID = "aster"
		}
	}
	if q.Workers <= 0 {
		q.Workers = DefaultWorkers
	}
	if q.JobTimeout <= 0 {
		q.JobTimeout = DefaultJobTimeout
	}
	if q.RescueAfter <= q.JobTimeout {
		q.RescueAfter = q.JobTimeout + DefaultRescueMargin
	}
	if q.MaxAttempts <= 0 {
		q.MaxAttempts = DefaultMaxAttempts
	}
	if q.RetryBase <= 0 {
		q.RetryBase = DefaultRetryBase
	}
	if q.RetryMax < q.RetryBase {
		q.RetryMax = max(DefaultRetryMax, q.RetryBase)
	}
	if q.Lease <= 0 {
		q.Lease = DefaultLease
	}
	if q.BusySnooze <= 0 {
		q.BusySnooze = DefaultBusySnooze
	}
	if q.PollInterval <= 0 {
		q.PollInterval = DefaultPollInterval
	}
	return q
}

func (q QueueOptions) riverConfig(w *reviewWorker, log *slog.Logger) *river.Config {
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	return &river.Config{
		ID:                   q.ClientID,
		Logger:               quiet(log),
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: q.Workers}},
		Workers:              workers,
		JobTimeout:           q.JobTimeout,
		RescueStuckJobsAfter: q.RescueAfter,
		MaxAttempts:          q.MaxAttempts,
		RetryPolicy:          backoff{base: q.RetryBase, max: q.RetryMax},
		FetchPollInterval:    q.PollInterval,
		FetchCooldown:        min(100*time.Millisecond, q.PollInterval),
	}
}

// backoff is exponential from base, doubling per attempt, capped at max, with ±25% jitter.
type backoff struct{ base, max time.Duration }

func (b backoff) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(b.delay(job.Attempt))
}

func (b backoff) delay(attempt int) time.Duration {
	d := b.base << min(max(attempt-1, 0), 30)
	if d <= 0 || d > b.max {
		d = b.max
	}
	j := d / 4
	return d - j + rand.N(2*j+1)
}

// reviewArgs is the River job: review one pull request. It carries no head SHA: the job
// reviews the head the pull request has when it runs, so a newer push folds into a waiting
// job instead of queueing another.
type reviewArgs struct {
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	Number         int    `json:"number"`
	InstallationID int64  `json:"installation_id"`
}

// Kind implements river.JobArgs.
func (reviewArgs) Kind() string { return "aster_review" }

// reviewWorker hands River's jobs to the store's handler. It is registered with the River
// client before the Store is complete; Open sets s.
type reviewWorker struct {
	river.WorkerDefaults[reviewArgs]
	s *Store
}

func (w *reviewWorker) Work(ctx context.Context, job *river.Job[reviewArgs]) error {
	return w.s.work(ctx, job)
}

// Handler reviews one job. Returning an error retries the job with backoff (or gives up
// after the last attempt); wrap with Permanent to give up at once, return an error wrapping
// ErrPullBusy (as Claim does) to wait for the pull request's running job.
type Handler func(ctx context.Context, job *Job) error

// Permanent marks an error that retrying cannot fix (a 404, a revoked installation).
func Permanent(err error) error { return &permanentError{err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type queueState struct {
	handler Handler
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start runs the queue's workers with handler until Stop. Before taking work it makes jobs
// this client id left running (a previous process killed mid-job) available again, and drops
// that process's leases, so an interrupted review runs again right after a restart.
func (s *Store) Start(ctx context.Context, handler Handler) error {
	c := s.e.client()
	if c == nil {
		return ErrNotStarted
	}
	if s.queue != nil {
		return errors.New("store: queue already started")
	}
	if n, err := s.recover(ctx); err != nil {
		return err
	} else if n > 0 {
		s.log.Warn("jobs interrupted by a previous process run again", "jobs", n, "client", s.q.ClientID)
	}
	qctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.queue = &queueState{handler: handler, cancel: cancel}
	if err := c.Start(qctx); err != nil {
		cancel()
		s.queue = nil
		return fmt.Errorf("start queue: %w", err)
	}
	return nil
}

// Stop waits for running jobs until ctx is done, then cancels them (they are retried).
func (s *Store) Stop(ctx context.Context) error {
	q := s.queue
	c := s.e.client()
	if q == nil || c == nil {
		return nil
	}
	err := c.Stop(ctx)
	if err != nil {
		hard, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = c.StopAndCancel(hard)
		cancel()
	}
	q.cancel()
	q.wg.Wait()
	s.queue = nil
	return err
}

// recover handles what a previous process with this client id left behind.
func (s *Store) recover(ctx context.Context) (int, error) {
	res, err := s.e.client().JobList(ctx, river.NewJobListParams().States(rivertype.JobStateRunning).First(10000))
	if err != nil {
		return 0, fmt.Errorf("list running jobs: %w", err)
	}
	var mine []*rivertype.JobRow
	for _, j := range res.Jobs {
		if n := len(j.AttemptedBy); n > 0 && j.AttemptedBy[n-1] == s.q.ClientID {
			mine = append(mine, j)
		}
	}
	if err := s.e.rescue(ctx, mine); err != nil {
		return 0, err
	}
	if _, err := s.db.Exec(ctx, `UPDATE aster_pulls SET running_job = NULL, lease_owner = '', lease_until = 0, running_sha = ''
		WHERE lease_owner = $1`, s.q.ClientID); err != nil {
		return 0, fmt.Errorf("drop stale leases: %w", err)
	}
	return len(mine), nil
}

func (s *Store) work(ctx context.Context, rj *river.Job[reviewArgs]) error {
	q := s.queue
	if q == nil {
		return errors.New("store: queue stopped")
	}
	q.wg.Add(1)
	defer q.wg.Done()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	j := &Job{
		ID: rj.ID, Attempt: rj.Attempt, MaxAttempts: rj.MaxAttempts, Waited: -1,
		Pull:           PullKey{Owner: rj.Args.Owner, Repo: rj.Args.Repo, Number: rj.Args.Number},
		InstallationID: rj.Args.InstallationID,
		s:              s, rj: rj, cancel: cancel,
	}
	if rj.AttemptedAt != nil {
		j.Waited = max(rj.AttemptedAt.Sub(rj.ScheduledAt), 0)
	}
	err := q.handler(ctx, j)
	j.stopHeartbeat()
	if j.claimed && !j.finished {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if rerr := s.release(rctx, j); rerr != nil && !errors.Is(rerr, ErrLeaseLost) {
			s.log.Error("release pull request lease", "job", j.ID, "err", rerr)
		}
		rcancel()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrPullBusy):
		return river.JobSnooze(s.q.BusySnooze/2 + rand.N(s.q.BusySnooze/2+1))
	case IsPermanent(err):
		return river.JobCancel(err)
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrLeaseLost) {
		return fmt.Errorf("%w: %w", ErrLeaseLost, err)
	}
	return err
}

// Job is one review job, handed to the Handler.
type Job struct {
	ID             int64
	Attempt        int // 1 for the first run
	MaxAttempts    int
	Pull           PullKey
	InstallationID int64
	// Waited is how long the job waited between becoming runnable (queued, or its retry or
	// snooze due) and this attempt starting; -1 when unknown.
	Waited time.Duration

	s        *Store
	rj       *river.Job[reviewArgs]
	cancel   context.CancelCauseFunc
	mu       sync.Mutex
	claimed  bool
	finished bool
	claim    Claim
	stopHB   chan struct{}
	hbDone   chan struct{}
}

// LastAttempt reports whether a failure now is final (no retry follows).
func (j *Job) LastAttempt() bool { return j.Attempt >= j.MaxAttempts }

func (j *Job) stopHeartbeat() {
	j.mu.Lock()
	stop, done := j.stopHB, j.hbDone
	j.stopHB = nil
	j.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// heartbeat renews the lease every third of its length; a lost lease cancels the job.
func (j *Job) heartbeat(ctx context.Context) {
	stop, done := make(chan struct{}), make(chan struct{})
	j.mu.Lock()
	j.stopHB, j.hbDone = stop, done
	j.mu.Unlock()
	go func() {
		defer close(done)
		t := time.NewTicker(j.s.q.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ok, err := j.s.renew(ctx, j)
			if err != nil {
				j.s.log.Warn("renew lease", "job", j.ID, "err", err)
				continue
			}
			if !ok {
				j.cancel(ErrLeaseLost)
				return
			}
		}
	}()
}

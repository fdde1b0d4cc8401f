package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// PullKey names one pull request.
type PullKey struct {
	Owner, Repo string
	Number      int
}

func (k PullKey) String() string { return fmt.Sprintf("%s/%s#%d", k.Owner, k.Repo, k.Number) }

// Delivery is one accepted webhook delivery, as recorded for dedupe and for operators.
type Delivery struct {
	ID      string // X-GitHub-Delivery, compared case-insensitively (stored lower-case)
	Event   string
	Action  string
	Repo    string // owner/name, when the event has one
	Number  int
	HeadSHA string
	Sender  string
}

// ReviewRequest asks for a review of a pull request.
type ReviewRequest struct {
	Delivery       Delivery
	Pull           PullKey
	InstallationID int64
	// HeadSHA is the head the event announced ("" for a /aster review command).
	HeadSHA string
	// Force asks for a run even when the head was already reviewed (/aster review); By is
	// who asked, whose permission the worker checks before honouring it.
	Force bool
	By    string
	// Command identifies the comment of a command (nil for other requests): each
	// (comment, edit time) asks for one run, whatever delivery id it arrives under.
	Command *Command
	// Threads: a person resolved one of Aster's review threads or gave a thread command in
	// one; the job reads the threads (a dismissal) whatever else it does.
	Threads bool
}

// Command is one version of a command comment.
type Command struct {
	CommentID int64
	UpdatedAt time.Time // the comment's updated_at: a new one for each edit
	// Name is the command: "" for /aster review (with Force set), else a control
	// command the job answers in place (CmdPause, CmdResume, CmdHelp).
	Name string
}

// The control commands a pull request's job answers before anything else.
const (
	CmdPause  = "pause"
	CmdResume = "resume"
	CmdHelp   = "help"
	// CmdInThread: /aster ignore or unignore in the conversation, answered with where it works.
	CmdInThread = "in-thread"
)

// Enqueued says what RequestReview did.
type Enqueued struct {
	JobID int64
	// Coalesced: a job of this pull request was already waiting and will review the newest
	// head, or one is running on the announced head right now; no job was added.
	Coalesced bool
	// Reviewed: the announced head is the one last reviewed; no job was added (JobID 0).
	Reviewed bool
	// Paused: the pull request is paused (/aster pause); an event adds no job.
	Paused bool
}

// waiting reports whether a job in state st will still run (and so can take a newer head).
// A running job counts only while it has not claimed the pull request yet: RequestReview
// sees it as waiting_job, and it reads the head after its claim.
func waiting(st rivertype.JobState) bool {
	switch st {
	case rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable,
		rivertype.JobStatePending, rivertype.JobStateRunning:
		return true
	}
	return false
}

// RequestReview stores the delivery and makes sure one job will review the pull request,
// in one transaction: a delivery id already stored (in any case) is ErrDuplicateDelivery, a
// command comment already stored at the same edit time ErrDuplicateCommand, and neither
// changes anything. A pull request that already has a waiting job gets no second one (that
// job reviews whatever the head is when it runs, so a newer push replaces the older one). An
// event announcing the head last reviewed adds no job either, nor does an opened or
// synchronize for the head a live job is reviewing now: that is what a replay under a new
// delivery id, or a late event of a race, announces. An event of a paused pull request
// adds no job either (commands and resolved threads do).
func (s *Store) RequestReview(ctx context.Context, r ReviewRequest) (Enqueued, error) {
	var out Enqueued
	now := nowMS()
	force, threads := 0, 0
	if r.Force {
		force = 1
	}
	if r.Threads {
		threads = 1
	}
	err := s.e.inTx(ctx, func(t *txn) error {
		if err := insertDelivery(ctx, t, r.Delivery, now); err != nil {
			return err
		}
		if r.Command != nil {
			if err := insertCommand(ctx, t, r, now); err != nil {
				return err
			}
		}
		var waitingJob, runningJob *int64
		var lastReviewed, runningSHA, pausedBy string
		var leaseUntil int64
		err := t.QueryRow(ctx, `INSERT INTO aster_pulls
			(owner, repo, number, installation_id, requested_sha, cause, force_seq, force_by, threads_seq, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (owner, repo, number) DO UPDATE SET
				installation_id = excluded.installation_id,
				requested_sha = CASE WHEN excluded.requested_sha <> '' THEN excluded.requested_sha ELSE aster_pulls.requested_sha END,
				cause = CASE WHEN excluded.cause <> '' THEN excluded.cause ELSE aster_pulls.cause END,
				force_seq = aster_pulls.force_seq + excluded.force_seq,
				force_by = CASE WHEN excluded.force_by <> '' THEN excluded.force_by ELSE aster_pulls.force_by END,
				threads_seq = aster_pulls.threads_seq + excluded.threads_seq,
				updated_at = excluded.updated_at
			RETURNING waiting_job, running_job, running_sha, lease_until, last_reviewed_sha, paused_by`,
			r.Pull.Owner, r.Pull.Repo, r.Pull.Number, r.InstallationID, r.HeadSHA, cause(r), force, forceBy(r), threads, now,
		).Scan(&waitingJob, &runningJob, &runningSHA, &leaseUntil, &lastReviewed, &pausedBy)
		if err != nil {
			return fmt.Errorf("record pull request: %w", err)
		}
		if pausedBy != "" && !r.Force && r.Command == nil && !r.Threads {
			// Paused: the head is recorded (a /aster resume reviews it), nothing runs.
			out = Enqueued{Paused: true}
			return setDeliveryOutcome(ctx, t, r.Delivery.ID, "paused", nil)
		}
		if waitingJob != nil {
			st, ok, err := t.jobState(ctx, *waitingJob)
			if err != nil {
				return fmt.Errorf("waiting job: %w", err)
			}
			if ok && waiting(st) {
				out = Enqueued{JobID: *waitingJob, Coalesced: true}
				return setDeliveryOutcome(ctx, t, r.Delivery.ID, "coalesced", waitingJob)
			}
		}
		if !r.Force && r.HeadSHA != "" {
			// The same head again: the running job covers it (its claim read this head),
			// or it was reviewed already. The lease must be live: a dead process's job
			// reviews nothing until it is rescued. Only events that merely announce a head
			// join a running job: reopened and ready_for_review change whether it reviews
			// at all (it may be skipping a closed or draft pull request right now).
			if runningJob != nil && runningSHA == r.HeadSHA && leaseUntil > now && announcesHead(r.Delivery.Action) {
				out = Enqueued{JobID: *runningJob, Coalesced: true}
				return setDeliveryOutcome(ctx, t, r.Delivery.ID, "coalesced", runningJob)
			}
			if runningJob == nil && lastReviewed == r.HeadSHA {
				out = Enqueued{Reviewed: true}
				return setDeliveryOutcome(ctx, t, r.Delivery.ID, "already_reviewed", nil)
			}
		}
		id, err := t.insertJob(ctx, reviewArgs{Owner: r.Pull.Owner, Repo: r.Pull.Repo, Number: r.Pull.Number,
			InstallationID: r.InstallationID}, nil)
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		if _, err := t.Exec(ctx, `UPDATE aster_pulls SET waiting_job = $1 WHERE owner = $2 AND repo = $3 AND number = $4`,
			id, r.Pull.Owner, r.Pull.Repo, r.Pull.Number); err != nil {
			return fmt.Errorf("record waiting job: %w", err)
		}
		out = Enqueued{JobID: id}
		return setDeliveryOutcome(ctx, t, r.Delivery.ID, "queued", &id)
	})
	return out, err
}

// insertCommand records one version of a command comment; a version already recorded is
// ErrDuplicateCommand. Rows are kept as long as the history: a signed body can be replayed
// at any time, and each replay would otherwise be a paid review.
func insertCommand(ctx context.Context, t *txn, r ReviewRequest, now int64) error {
	c := r.Command
	if c.CommentID <= 0 {
		return errors.New("review command without a comment id")
	}
	done := 1 // a review command is handled through force_seq
	if c.Name != "" {
		done = 0 // a control command waits for its job to answer it
	}
	n, err := t.Exec(ctx, `INSERT INTO aster_commands
		(comment_id, updated_at, owner, repo, number, delivery_id, sender, received_at, name, done)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (comment_id, updated_at) DO NOTHING`,
		c.CommentID, c.UpdatedAt.UnixMilli(), r.Pull.Owner, r.Pull.Repo, r.Pull.Number, strings.ToLower(r.Delivery.ID), r.By, now,
		c.Name, done)
	if err != nil {
		return fmt.Errorf("record review command: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: comment %d updated %s", ErrDuplicateCommand, c.CommentID, c.UpdatedAt.UTC().Format(time.RFC3339))
	}
	return nil
}

func announcesHead(action string) bool { return action == "opened" || action == "synchronize" }

func cause(r ReviewRequest) string {
	switch {
	case r.Force:
		return "command"
	case r.Command != nil || r.Threads:
		return "" // a control command or a thread changes no review's cause
	}
	return r.Delivery.Action
}

func forceBy(r ReviewRequest) string {
	if r.Force {
		return r.By
	}
	return ""
}

func insertDelivery(ctx context.Context, t *txn, d Delivery, now int64) error {
	if d.ID == "" {
		return errors.New("delivery without an id")
	}
	n, err := t.Exec(ctx, `INSERT INTO aster_deliveries
		(delivery_id, event, action, repo, number, head_sha, sender, outcome, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'recorded', $8)
		ON CONFLICT (delivery_id) DO NOTHING`,
		strings.ToLower(d.ID), d.Event, d.Action, d.Repo, d.Number, d.HeadSHA, d.Sender, now)
	if err != nil {
		return fmt.Errorf("record delivery: %w", err)
	}
	if n == 0 {
		return ErrDuplicateDelivery
	}
	return nil
}

func setDeliveryOutcome(ctx context.Context, t *txn, id, outcome string, job *int64) error {
	_, err := t.Exec(ctx, `UPDATE aster_deliveries SET outcome = $1, job_id = $2 WHERE delivery_id = $3`, outcome, job, strings.ToLower(id))
	if err != nil {
		return fmt.Errorf("record delivery outcome: %w", err)
	}
	return nil
}

// Installation is an installation event's content.
type Installation struct {
	ID           int64
	Action       string
	Account      string
	Repositories []string
	Sender       string
}

// RecordInstallation stores an installation delivery (dedupe as RequestReview) and the
// installation's latest state.
func (s *Store) RecordInstallation(ctx context.Context, d Delivery, in Installation) error {
	repos, err := json.Marshal(in.Repositories)
	if err != nil {
		return err
	}
	if in.Repositories == nil {
		repos = []byte("[]")
	}
	now := nowMS()
	return s.e.inTx(ctx, func(t *txn) error {
		if err := insertDelivery(ctx, t, d, now); err != nil {
			return err
		}
		_, err := t.Exec(ctx, `INSERT INTO aster_installations
			(installation_id, account, action, repositories, sender, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (installation_id) DO UPDATE SET account = excluded.account, action = excluded.action,
				repositories = CASE WHEN excluded.repositories <> '[]' THEN excluded.repositories ELSE aster_installations.repositories END,
				sender = excluded.sender, updated_at = excluded.updated_at`,
			in.ID, in.Account, in.Action, string(repos), in.Sender, now)
		if err != nil {
			return fmt.Errorf("record installation: %w", err)
		}
		return nil
	})
}

// Claim is the state of a pull request as a job took it over.
type Claim struct {
	InstallationID  int64
	RequestedSHA    string // head announced by the latest event ("" when none)
	LastReviewedSHA string // head of the last finished review ("" before the first)
	Cause           string // action of the latest event, or "command"
	// Force: a /aster review is pending, asked by ForceBy.
	Force   bool
	ForceBy string
	// Announced: a pull_request event, not only a command, asked for this job (it was queued
	// or coalesced for one). A job no event asked for has only its commands as a reason to
	// run, and does nothing when they are refused.
	Announced bool
	// PausedBy is who paused the pull request (/aster pause), "" when it is not paused:
	// no automatic review runs then.
	PausedBy string
	// Controls are the control commands (pause, resume, help) not answered yet, oldest
	// first; the job answers each and marks it with ControlDone.
	Controls []Control
	// Threads: a person resolved one of Aster's threads since the job that last read
	// them; ThreadsRead marks them read.
	Threads bool
	// forceSeq is the command counter seen at the claim; Finish marks it handled.
	forceSeq   int
	threadsSeq int
}

// Control is one control command comment waiting for its answer.
type Control struct {
	CommentID int64
	UpdatedAt time.Time
	Name      string // CmdPause, CmdResume, CmdHelp or CmdInThread
	By        string // who wrote it; the job checks their permission
}

// PauseChange is what a control command does to the pull request's pause.
type PauseChange int

// The changes of ControlDone.
const (
	PauseKeep   PauseChange = iota // answer only (help, a refused command)
	PauseSet                       // pause, by the command's author
	PauseLifted                    // resume
)

// Claim takes the pull request's lease for this job. It fails with ErrPullBusy while another
// job of the pull request holds a live lease (the worker then snoozes the job). On success
// the job is no longer the pull request's waiting job (a new event queues another), and the
// lease is renewed in the background until the job ends.
func (j *Job) Claim(ctx context.Context) (Claim, error) {
	now := time.Now()
	var c Claim
	var forceDone, threadsDone int
	var announced int64
	err := j.s.db.QueryRow(ctx, `UPDATE aster_pulls SET
			running_job = $1, lease_owner = $2, lease_until = $3, running_sha = requested_sha,
			waiting_job = CASE WHEN waiting_job = $1 THEN NULL ELSE waiting_job END
		WHERE owner = $4 AND repo = $5 AND number = $6
			AND (running_job IS NULL OR lease_until <= $7)
		RETURNING installation_id, requested_sha, last_reviewed_sha, cause, force_seq, force_done, force_by,
			(SELECT COUNT(*) FROM aster_deliveries WHERE job_id = $1 AND event = 'pull_request'),
			paused_by, threads_seq, threads_done`,
		j.ID, j.s.q.ClientID, now.Add(j.s.q.Lease).UnixMilli(), j.Pull.Owner, j.Pull.Repo, j.Pull.Number, now.UnixMilli(),
	).Scan(&c.InstallationID, &c.RequestedSHA, &c.LastReviewedSHA, &c.Cause, &c.forceSeq, &forceDone, &c.ForceBy, &announced,
		&c.PausedBy, &c.threadsSeq, &threadsDone)
	if errors.Is(err, errNoRows) {
		var one int
		if err := j.s.db.QueryRow(ctx, `SELECT 1 FROM aster_pulls WHERE owner = $1 AND repo = $2 AND number = $3`,
			j.Pull.Owner, j.Pull.Repo, j.Pull.Number).Scan(&one); errors.Is(err, errNoRows) {
			return c, Permanent(fmt.Errorf("claim %s: no such pull request in the store", j.Pull))
		}
		return c, fmt.Errorf("claim %s: %w", j.Pull, ErrPullBusy)
	}
	if err != nil {
		return c, fmt.Errorf("claim %s: %w", j.Pull, err)
	}
	c.Force = c.forceSeq > forceDone
	c.Announced = announced > 0
	c.Threads = c.threadsSeq > threadsDone
	if c.Controls, err = j.s.pendingControls(ctx, j.Pull); err != nil {
		if rerr := j.s.release(ctx, j); rerr != nil && !errors.Is(rerr, ErrLeaseLost) {
			j.s.log.Error("release pull request lease", "job", j.ID, "err", rerr)
		}
		return c, fmt.Errorf("claim %s: %w", j.Pull, err)
	}
	j.mu.Lock()
	j.claimed, j.claim = true, c
	j.mu.Unlock()
	j.heartbeat(ctx)
	return c, nil
}

// pendingControls lists the control commands of a pull request not answered yet.
func (s *Store) pendingControls(ctx context.Context, k PullKey) ([]Control, error) {
	rows, err := s.db.Query(ctx, `SELECT comment_id, updated_at, name, sender FROM aster_commands
		WHERE owner = $1 AND repo = $2 AND number = $3 AND done = 0 ORDER BY received_at, comment_id, updated_at`,
		k.Owner, k.Repo, k.Number)
	if err != nil {
		return nil, fmt.Errorf("pending commands: %w", err)
	}
	defer rows.Close()
	var out []Control
	for rows.Next() {
		var c Control
		var at int64
		if err := rows.Scan(&c.CommentID, &at, &c.Name, &c.By); err != nil {
			return nil, fmt.Errorf("pending commands: %w", err)
		}
		c.UpdatedAt = time.UnixMilli(at).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}

// ControlDone marks a control command answered and applies what it does to the pull
// request's pause, in one transaction: a command is applied once, and a retry after a
// crash before it finds the command still waiting.
func (j *Job) ControlDone(ctx context.Context, c Control, change PauseChange) error {
	return j.s.e.inTx(ctx, func(t *txn) error {
		switch change {
		case PauseSet:
			if _, err := t.Exec(ctx, `UPDATE aster_pulls SET paused_by = $1, paused_at = $2
				WHERE owner = $3 AND repo = $4 AND number = $5`, c.By, nowMS(), j.Pull.Owner, j.Pull.Repo, j.Pull.Number); err != nil {
				return fmt.Errorf("pause: %w", err)
			}
		case PauseLifted:
			if _, err := t.Exec(ctx, `UPDATE aster_pulls SET paused_by = '', paused_at = 0
				WHERE owner = $1 AND repo = $2 AND number = $3`, j.Pull.Owner, j.Pull.Repo, j.Pull.Number); err != nil {
				return fmt.Errorf("resume: %w", err)
			}
		}
		if _, err := t.Exec(ctx, `UPDATE aster_commands SET done = 1 WHERE comment_id = $1 AND updated_at = $2`,
			c.CommentID, c.UpdatedAt.UnixMilli()); err != nil {
			return fmt.Errorf("mark command answered: %w", err)
		}
		return nil
	})
}

// ThreadsRead marks the resolved threads seen at the claim as read.
func (j *Job) ThreadsRead(ctx context.Context) error {
	_, err := j.s.db.Exec(ctx, `UPDATE aster_pulls SET threads_done = $1
		WHERE owner = $2 AND repo = $3 AND number = $4 AND threads_done < $1`,
		j.claim.threadsSeq, j.Pull.Owner, j.Pull.Repo, j.Pull.Number)
	if err != nil {
		return fmt.Errorf("mark threads read: %w", err)
	}
	return nil
}

func (s *Store) renew(ctx context.Context, j *Job) (bool, error) {
	n, err := s.db.Exec(ctx, `UPDATE aster_pulls SET lease_until = $1
		WHERE owner = $2 AND repo = $3 AND number = $4 AND running_job = $5 AND lease_owner = $6`,
		time.Now().Add(s.q.Lease).UnixMilli(), j.Pull.Owner, j.Pull.Repo, j.Pull.Number, j.ID, s.q.ClientID)
	return n == 1, err
}

// release gives the lease up after a failed or abandoned run and wakes the waiting job.
func (s *Store) release(ctx context.Context, j *Job) error {
	return s.e.inTx(ctx, func(t *txn) error {
		return releaseTx(ctx, t, j, "", false)
	})
}

// releaseTx clears the job's lease (and, when reviewed is set, records the reviewed head)
// and makes the pull request's waiting job runnable now. It reports ErrLeaseLost when the
// job no longer holds the lease.
func releaseTx(ctx context.Context, t *txn, j *Job, reviewed string, forceHandled bool) error {
	forceDone := 0
	if forceHandled {
		forceDone = j.claim.forceSeq
	}
	var waitingJob *int64
	err := t.QueryRow(ctx, `UPDATE aster_pulls SET
			running_job = NULL, lease_owner = '', lease_until = 0, running_sha = '',
			last_reviewed_sha = CASE WHEN $1 <> '' THEN $1 ELSE last_reviewed_sha END,
			force_done = CASE WHEN force_done < $2 THEN $2 ELSE force_done END
		WHERE owner = $3 AND repo = $4 AND number = $5 AND running_job = $6
		RETURNING waiting_job`,
		reviewed, forceDone, j.Pull.Owner, j.Pull.Repo, j.Pull.Number, j.ID).Scan(&waitingJob)
	if errors.Is(err, errNoRows) {
		return ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	if waitingJob != nil && *waitingJob != j.ID {
		if err := t.retryJob(ctx, *waitingJob); err != nil {
			return fmt.Errorf("wake waiting job: %w", err)
		}
	}
	return nil
}

// Finish is how a job ends successfully.
type Finish struct {
	// ReviewedSHA becomes the pull request's last reviewed head ("" leaves it).
	ReviewedSHA string
	// ForceHandled marks the pending /aster review (seen at the claim) as handled.
	ForceHandled bool
	// Record is added to the history (nil adds nothing).
	Record *ReviewRecord
}

// Finish records the outcome, releases the lease, wakes the waiting job and completes the
// job, all in one transaction: a crash before it commits runs the job again, after it
// never.
func (j *Job) Finish(ctx context.Context, f Finish) error {
	j.stopHeartbeat()
	err := j.s.e.completeTx(ctx, j.rj, func(t *txn) error {
		if f.Record != nil {
			if err := insertReview(ctx, t, f.Record); err != nil {
				return err
			}
		}
		return releaseTx(ctx, t, j, f.ReviewedSHA, f.ForceHandled)
	})
	if err != nil {
		return fmt.Errorf("finish job %d: %w", j.ID, err)
	}
	j.mu.Lock()
	j.finished = true
	j.mu.Unlock()
	return nil
}

// PullState is a pull request's row, for tests and operators.
type PullState struct {
	Pull            PullKey
	InstallationID  int64
	RequestedSHA    string
	LastReviewedSHA string
	WaitingJob      int64
	RunningJob      int64
	LeaseOwner      string
	LeaseUntil      time.Time
	PausedBy        string // who paused it (/aster pause); "" when not paused
}

// Pull returns the stored state of one pull request (ok false when none).
func (s *Store) Pull(ctx context.Context, k PullKey) (PullState, bool, error) {
	p := PullState{Pull: k}
	var waitingJob, runningJob *int64
	var until int64
	err := s.db.QueryRow(ctx, `SELECT installation_id, requested_sha, last_reviewed_sha, waiting_job, running_job,
		lease_owner, lease_until, paused_by FROM aster_pulls WHERE owner = $1 AND repo = $2 AND number = $3`,
		k.Owner, k.Repo, k.Number).Scan(&p.InstallationID, &p.RequestedSHA, &p.LastReviewedSHA, &waitingJob, &runningJob,
		&p.LeaseOwner, &until, &p.PausedBy)
	if errors.Is(err, errNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	if waitingJob != nil {
		p.WaitingJob = *waitingJob
	}
	if runningJob != nil {
		p.RunningJob = *runningJob
	}
	p.LeaseUntil = fromMS(until)
	return p, true, nil
}

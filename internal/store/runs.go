package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Run is the posting progress of the review of one head of one pull request. A job saves
// it after every step that changes GitHub, so a retry (after a crash, a 5xx, a timeout)
// resumes instead of repeating: the review result is reused rather than asked of the model
// again, the check run is updated rather than created twice, a posted review is not posted
// again.
type Run struct {
	Pull    PullKey
	HeadSHA string
	// SinceSHA is the head of the previous review when this one is incremental.
	SinceSHA string
	// JobID is the job that started this run.
	JobID int64
	// Result is the finished review, encoded by the caller (nil until there is one).
	Result       []byte
	CheckRunID   int64
	ReviewPosted bool
	ReviewID     int64
	SummaryID    int64
	CheckDone    bool
	StartedAt    time.Time
	UpdatedAt    time.Time
}

const runColumns = `owner, repo, number, head_sha, since_sha, job_id, result, check_run_id, review_posted, review_id,
	summary_id, check_done, started_at, updated_at`

func scanRun(r row) (Run, error) {
	var run Run
	var result *string
	var posted, done int
	var started, updated int64
	err := r.Scan(&run.Pull.Owner, &run.Pull.Repo, &run.Pull.Number, &run.HeadSHA, &run.SinceSHA, &run.JobID, &result,
		&run.CheckRunID, &posted, &run.ReviewID, &run.SummaryID, &done, &started, &updated)
	if err != nil {
		return run, err
	}
	if result != nil {
		run.Result = []byte(*result)
	}
	run.ReviewPosted, run.CheckDone = posted != 0, done != 0
	run.StartedAt, run.UpdatedAt = fromMS(started), fromMS(updated)
	return run, nil
}

// Run returns the saved progress for one head (ok false when there is none).
func (s *Store) Run(ctx context.Context, k PullKey, head string) (Run, bool, error) {
	run, err := scanRun(s.db.QueryRow(ctx, `SELECT `+runColumns+` FROM aster_runs
		WHERE owner = $1 AND repo = $2 AND number = $3 AND head_sha = $4`, k.Owner, k.Repo, k.Number, head))
	if errors.Is(err, errNoRows) {
		return Run{Pull: k, HeadSHA: head}, false, nil
	}
	if err != nil {
		return run, false, fmt.Errorf("load run: %w", err)
	}
	return run, true, nil
}

// SaveRun creates or replaces the progress of one head.
func (s *Store) SaveRun(ctx context.Context, run Run) error {
	now := nowMS()
	if run.StartedAt.IsZero() {
		run.StartedAt = time.Now()
	}
	var result *string
	if run.Result != nil {
		r := string(run.Result)
		result = &r
	}
	_, err := s.db.Exec(ctx, `INSERT INTO aster_runs (`+runColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (owner, repo, number, head_sha) DO UPDATE SET
			since_sha = excluded.since_sha, job_id = excluded.job_id, result = excluded.result, started_at = excluded.started_at, check_run_id = excluded.check_run_id,
			review_posted = excluded.review_posted, review_id = excluded.review_id, summary_id = excluded.summary_id,
			check_done = excluded.check_done, updated_at = excluded.updated_at`,
		run.Pull.Owner, run.Pull.Repo, run.Pull.Number, run.HeadSHA, run.SinceSHA, run.JobID, result, run.CheckRunID,
		b2i(run.ReviewPosted), run.ReviewID, run.SummaryID, b2i(run.CheckDone), run.StartedAt.UnixMilli(), now)
	if err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	return nil
}

// OpenCheckRuns lists the runs of a pull request whose check run is not completed, other
// than the one of head: older heads a newer push superseded. A run with CheckRunID 0 was
// saved just before its check run was created, which may have happened unrecorded.
func (s *Store) OpenCheckRuns(ctx context.Context, k PullKey, head string) ([]Run, error) {
	rs, err := s.db.Query(ctx, `SELECT `+runColumns+` FROM aster_runs
		WHERE owner = $1 AND repo = $2 AND number = $3 AND head_sha <> $4 AND check_done = 0`,
		k.Owner, k.Repo, k.Number, head)
	if err != nil {
		return nil, fmt.Errorf("open check runs: %w", err)
	}
	defer rs.Close()
	var out []Run
	for rs.Next() {
		run, err := scanRun(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, rs.Err()
}

// Prune deletes delivery ids and run progress older than age (GitHub redelivers only
// recent deliveries; runs only matter until their job ends). History is kept.
func (s *Store) Prune(ctx context.Context, age time.Duration) (int64, error) {
	cut := time.Now().Add(-age).UnixMilli()
	n1, err := s.db.Exec(ctx, `DELETE FROM aster_deliveries WHERE received_at < $1`, cut)
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	n2, err := s.db.Exec(ctx, `DELETE FROM aster_runs WHERE updated_at < $1`, cut)
	if err != nil {
		return n1, fmt.Errorf("prune runs: %w", err)
	}
	return n1 + n2, nil
}

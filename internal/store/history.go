package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Outcomes of a review in the history.
const (
	OutcomePosted     = "posted"      // a review, summary and check run were posted
	OutcomeNothingNew = "nothing_new" // reviewed; every comment was already on the pull request
	OutcomeSkipped    = "skipped"     // not reviewed (closed, draft, head already reviewed, refused command)
	OutcomeFailed     = "failed"      // gave up after the last attempt or a permanent error
)

// ReviewRecord is one line of the review history.
type ReviewRecord struct {
	ID             int64            `json:"id"`
	Pull           PullKey          `json:"-"`
	Repository     string           `json:"repository"`
	Number         int              `json:"number"`
	HeadSHA        string           `json:"head_sha"`
	BaseSHA        string           `json:"base_sha"`
	SinceSHA       string           `json:"since_sha,omitempty"`
	Cause          string           `json:"cause"`
	Outcome        string           `json:"outcome"`
	Conclusion     string           `json:"conclusion,omitempty"`
	Findings       int              `json:"findings"`
	Reported       int              `json:"reported"`
	Comments       int              `json:"comments"`
	InlineComments int              `json:"inline_comments"`
	InputTokens    int64            `json:"input_tokens"`
	OutputTokens   int64            `json:"output_tokens"`
	CostUSD        float64          `json:"cost_usd"`
	DurationsMS    map[string]int64 `json:"durations_ms"`
	Reason         string           `json:"reason,omitempty"`
	JobID          int64            `json:"job_id"`
	Attempt        int              `json:"attempt"`
	StartedAt      time.Time        `json:"started_at"`
	FinishedAt     time.Time        `json:"finished_at"`
	DurationMS     int64            `json:"duration_ms"`
}

// AddReview appends a record to the history outside a job's Finish (a failure).
func (s *Store) AddReview(ctx context.Context, rec *ReviewRecord) error {
	return s.e.inTx(ctx, func(t *txn) error { return insertReview(ctx, t, rec) })
}

func insertReview(ctx context.Context, t *txn, r *ReviewRecord) error {
	if r.FinishedAt.IsZero() {
		r.FinishedAt = time.Now()
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = r.FinishedAt
	}
	dur, err := json.Marshal(r.DurationsMS)
	if err != nil || r.DurationsMS == nil {
		dur = []byte("{}")
	}
	err = t.QueryRow(ctx, `INSERT INTO aster_reviews (owner, repo, number, head_sha, base_sha, since_sha, cause,
			outcome, conclusion, findings, reported, comments, inline_comments, input_tokens, output_tokens, cost_usd,
			durations, reason, job_id, attempt, started_at, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
		RETURNING id`,
		r.Pull.Owner, r.Pull.Repo, r.Pull.Number, r.HeadSHA, r.BaseSHA, r.SinceSHA, r.Cause, r.Outcome, r.Conclusion,
		r.Findings, r.Reported, r.Comments, r.InlineComments, r.InputTokens, r.OutputTokens, r.CostUSD, string(dur),
		r.Reason, r.JobID, r.Attempt, r.StartedAt.UnixMilli(), r.FinishedAt.UnixMilli()).Scan(&r.ID)
	if err != nil {
		return fmt.Errorf("record review: %w", err)
	}
	return nil
}

// HistoryFilter selects history records. Zero fields select everything.
type HistoryFilter struct {
	Repository string // owner/name
	Number     int
	Outcome    string
	Since      time.Time
	Limit      int // default 50
}

// History returns review records, newest first.
func (s *Store) History(ctx context.Context, f HistoryFilter) ([]ReviewRecord, error) {
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Repository != "" {
		owner, repo, _ := strings.Cut(f.Repository, "/")
		arg("owner = $%d", owner)
		arg("repo = $%d", repo)
	}
	if f.Number > 0 {
		arg("number = $%d", f.Number)
	}
	if f.Outcome != "" {
		arg("outcome = $%d", f.Outcome)
	}
	if !f.Since.IsZero() {
		arg("finished_at >= $%d", f.Since.UnixMilli())
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	q := `SELECT id, owner, repo, number, head_sha, base_sha, since_sha, cause, outcome, conclusion, findings, reported,
		comments, inline_comments, input_tokens, output_tokens, cost_usd, durations, reason, job_id, attempt,
		started_at, finished_at FROM aster_reviews`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, limit)
	q += fmt.Sprintf(" ORDER BY finished_at DESC, id DESC LIMIT $%d", len(args))
	rs, err := s.db.Query(ctx, q, args...)
	if err != nil {
		if strings.Contains(err.Error(), "aster_reviews") {
			return nil, fmt.Errorf("history: no reviews recorded in this database yet (%w)", err)
		}
		return nil, fmt.Errorf("history: %w", err)
	}
	defer rs.Close()
	var out []ReviewRecord
	for rs.Next() {
		var r ReviewRecord
		var dur string
		var started, finished int64
		if err := rs.Scan(&r.ID, &r.Pull.Owner, &r.Pull.Repo, &r.Pull.Number, &r.HeadSHA, &r.BaseSHA, &r.SinceSHA,
			&r.Cause, &r.Outcome, &r.Conclusion, &r.Findings, &r.Reported, &r.Comments, &r.InlineComments,
			&r.InputTokens, &r.OutputTokens, &r.CostUSD, &dur, &r.Reason, &r.JobID, &r.Attempt, &started, &finished); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		_ = json.Unmarshal([]byte(dur), &r.DurationsMS)
		r.Repository, r.Number = r.Pull.Owner+"/"+r.Pull.Repo, r.Pull.Number
		r.StartedAt, r.FinishedAt = fromMS(started), fromMS(finished)
		r.DurationMS = finished - started
		out = append(out, r)
	}
	return out, rs.Err()
}

// reviewJob is one review job as River lists it, with its arguments decoded.
type reviewJob struct {
	row  *rivertype.JobRow
	args reviewArgs
}

// reviewJobs lists the review jobs in the given states, oldest first (at most 10,000):
// ErrNotStarted before the store has a River client, River's error after op otherwise.
func (s *Store) reviewJobs(ctx context.Context, op string, states ...rivertype.JobState) ([]reviewJob, error) {
	c := s.e.client()
	if c == nil {
		return nil, ErrNotStarted
	}
	params := river.NewJobListParams().Kinds(reviewArgs{}.Kind()).First(10000).
		OrderBy(river.JobListOrderByID, river.SortOrderAsc).States(states...)
	res, err := c.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	out := make([]reviewJob, 0, len(res.Jobs))
	for _, j := range res.Jobs {
		rj := reviewJob{row: j}
		_ = json.Unmarshal(j.EncodedArgs, &rj.args)
		out = append(out, rj)
	}
	return out, nil
}

// QueuedJob is a review job in the queue, for operators and tests.
type QueuedJob struct {
	ID          int64
	State       string
	Attempt     int
	MaxAttempts int
	Pull        PullKey
	Errors      []string
}

// Jobs lists the queue's review jobs (every state River still keeps), oldest first.
func (s *Store) Jobs(ctx context.Context) ([]QueuedJob, error) {
	jobs, err := s.reviewJobs(ctx, "list jobs", rivertype.JobStateAvailable, rivertype.JobStateCancelled, rivertype.JobStateCompleted,
		rivertype.JobStateDiscarded, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled)
	if err != nil {
		return nil, err
	}
	var out []QueuedJob
	for _, rj := range jobs {
		j, a := rj.row, rj.args
		q := QueuedJob{ID: j.ID, State: string(j.State), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
			Pull: PullKey{Owner: a.Owner, Repo: a.Repo, Number: a.Number}}
		for _, e := range j.Errors {
			q.Errors = append(q.Errors, e.Error)
		}
		out = append(out, q)
	}
	return out, nil
}

// PendingJob is a review job not finished yet: waiting, running, or waiting to be retried.
type PendingJob struct {
	ID          int64     `json:"job_id"`
	Repository  string    `json:"repository"`
	Number      int       `json:"number"`
	State       string    `json:"state"` // available, scheduled, retryable, running, pending
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	LastError   string    `json:"last_error,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// ScheduledAt is when the job may (next) run: for a retryable job, its retry.
	ScheduledAt time.Time `json:"scheduled_at"`
}

// pendingStates are the River states of a job that is not finished.
var pendingStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}

// Pending lists the review jobs not finished yet, oldest first, each with its last error.
// It works on a store opened ReadOnly.
func (s *Store) Pending(ctx context.Context, repository string, number, limit int) ([]PendingJob, error) {
	if limit <= 0 {
		limit = 50
	}
	jobs, err := s.reviewJobs(ctx, "list pending jobs", pendingStates...)
	if err != nil && strings.Contains(err.Error(), "river_job") {
		return nil, nil // no queue in this database yet
	}
	if err != nil {
		return nil, err
	}
	var out []PendingJob
	for _, rj := range jobs {
		j, a := rj.row, rj.args
		full := a.Owner + "/" + a.Repo
		if (repository != "" && !strings.EqualFold(full, repository)) || (number > 0 && a.Number != number) {
			continue
		}
		p := PendingJob{ID: j.ID, Repository: full, Number: a.Number, State: string(j.State), Attempt: j.Attempt,
			MaxAttempts: j.MaxAttempts, CreatedAt: j.CreatedAt.UTC(), ScheduledAt: j.ScheduledAt.UTC()}
		if n := len(j.Errors); n > 0 {
			p.LastError = j.Errors[n-1].Error
		}
		out = append(out, p)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// JobStats counts the unfinished review jobs by state and attempt, for the metrics.
func (s *Store) JobStats(ctx context.Context) (map[string]map[int]int, error) {
	jobs, err := s.Pending(ctx, "", 0, 10000)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int]int{}
	for _, j := range jobs {
		if out[j.State] == nil {
			out[j.State] = map[int]int{}
		}
		out[j.State][j.Attempt]++
	}
	return out, nil
}

// Counts are the sizes of the store's tables, for operators and tests.
type Counts struct {
	Deliveries    int64 `json:"deliveries"`
	Installations int64 `json:"installations"`
	Pulls         int64 `json:"pulls"`
	Runs          int64 `json:"runs"`
	Reviews       int64 `json:"reviews"`
	Commands      int64 `json:"commands"`
}

// Counts counts the rows of Aster's tables.
func (s *Store) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	for _, q := range []struct {
		table string
		dst   *int64
	}{{"aster_deliveries", &c.Deliveries}, {"aster_installations", &c.Installations}, {"aster_pulls", &c.Pulls},
		{"aster_runs", &c.Runs}, {"aster_reviews", &c.Reviews}, {"aster_commands", &c.Commands}} {
		if err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM `+q.table).Scan(q.dst); err != nil {
			return c, fmt.Errorf("count %s: %w", q.table, err)
		}
	}
	return c, nil
}

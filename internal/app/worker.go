package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/textclip"
)

// Jobs is what the worker needs of the store besides the job itself; *store.Store
// implements it.
type Jobs interface {
	Run(ctx context.Context, k store.PullKey, head string) (store.Run, bool, error)
	SaveRun(ctx context.Context, run store.Run) error
	OpenCheckRuns(ctx context.Context, k store.PullKey, head string) ([]store.Run, error)
	AddReview(ctx context.Context, rec *store.ReviewRecord) error
	Dismiss(ctx context.Context, d store.Dismissal) (bool, error)
	Undismiss(ctx context.Context, owner, repo, findingID string) (bool, error)
	Dismissals(ctx context.Context, owner, repo string) ([]store.Dismissal, error)
}

var _ Jobs = (*store.Store)(nil)

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	GitHub   GitHub
	Jobs     Jobs
	Reviewer Reviewer
	// ReviewDrafts reviews draft pull requests too (a /aster review always does).
	ReviewDrafts bool
	// Tests runs every repository's tests, not only where .aster.yml names a command.
	Tests bool
	// TempDir holds downloaded archives ("" is the system default).
	TempDir   string
	MaxInline int // 0 means publish.DefaultMaxInline
	// Rechecker re-checks an earlier push's model comments by running their evidence
	// again. Nil takes the Reviewer's for the head under review when it has one
	// (PipelineReviewer.Rechecker); else model comments stay out of the lifecycle.
	Rechecker review.Rechecker
	// Secrets are removed from everything posted (the App key, the webhook secret, model
	// keys): a last line of defence.
	Secrets [][]byte
	// OnFinish, when set, is given the history record of every job that ends (not of
	// retried attempts).
	OnFinish func(rec *store.ReviewRecord)
	Logger   *slog.Logger
}

// Worker reviews the pull request of one job at a time: it is the store's Handler.
type Worker struct {
	opts WorkerOptions
	log  *slog.Logger
	red  *safetext.Redactor
}

// NewWorker checks opts.
func NewWorker(opts WorkerOptions) (*Worker, error) {
	if opts.GitHub == nil || opts.Jobs == nil || opts.Reviewer == nil {
		return nil, errors.New("app worker: GitHub, Jobs and Reviewer are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	secrets := make([]string, len(opts.Secrets))
	for i, s := range opts.Secrets {
		secrets[i] = string(s)
	}
	return &Worker{opts: opts, log: log, red: safetext.NewRedactor(secrets)}, nil
}

// Handle is a store.Handler: claim the pull request, review its head, post, finish.
func (w *Worker) Handle(ctx context.Context, job *store.Job) error {
	started := time.Now()
	claim, err := job.Claim(ctx)
	if err != nil {
		return err
	}
	log := w.log.With("job", job.ID, "attempt", job.Attempt, "pull", job.Pull.String())
	rec := &store.ReviewRecord{Pull: job.Pull, Cause: claim.Cause, JobID: job.ID, Attempt: job.Attempt, StartedAt: started}
	r := &run{w: w, job: job, claim: claim, rec: rec, log: log, started: started}
	fin, err := r.do(ctx)
	if err == nil {
		rec.FinishedAt = time.Now()
		fin.Record = rec
		if err := job.Finish(ctx, fin); err != nil {
			return err
		}
		w.finished(rec)
		log.Info("review finished", "outcome", rec.Outcome, "head", review.ShortSHA(rec.HeadSHA), "since", review.ShortSHA(rec.SinceSHA),
			"conclusion", rec.Conclusion, "inline", rec.InlineComments, "reason", rec.Reason, "ms", time.Since(started).Milliseconds())
		return nil
	}
	permanent := store.IsPermanent(err) || permanentGitHubError(err)
	if errors.Is(err, store.ErrPullBusy) || (!permanent && !job.LastAttempt()) {
		if !errors.Is(err, store.ErrPullBusy) {
			log.Warn("review attempt failed; it is retried", "err", err)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			r.retrying(dctx, err)
			cancel()
		}
		return err
	}
	// Give up: say so on the check run and in the history.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	r.abandon(dctx, err)
	rec.Outcome, rec.Reason, rec.FinishedAt = store.OutcomeFailed, textclip.OneLine(err.Error(), maxReasonBytes), time.Now()
	if aerr := w.opts.Jobs.AddReview(dctx, rec); aerr != nil {
		log.Error("record failed review", "err", aerr)
	}
	w.finished(rec)
	log.Error("review failed; giving up", "err", err, "permanent", permanent)
	if permanent {
		return store.Permanent(err)
	}
	return err
}

func (w *Worker) finished(rec *store.ReviewRecord) {
	if w.opts.OnFinish != nil {
		w.opts.OnFinish(rec)
	}
}

// run is one attempt at one job.
type run struct {
	w       *Worker
	job     *store.Job
	claim   store.Claim
	rec     *store.ReviewRecord
	log     *slog.Logger
	started time.Time
	api     RepoAPI
	state   store.Run
	stored  storedResult
	// earlier is the finished review of this same head that a new review (a command)
	// replaces: the lifecycle's previous review then. Nil otherwise.
	earlier *review.Report
	// unrecordedBy is the job whose attempt saved this head's run before creating its
	// check run and never recorded the run's id (see openCheckRun); 0 when none did.
	unrecordedBy int64
	// pausedBy is who paused the pull request ("" when not paused), after the job's own
	// control commands; note says what those commands were, for the history.
	pausedBy string
	note     []string
}

// storedResult is what a run keeps between attempts in store.Run.Result.
type storedResult struct {
	Report *review.Report `json:"report"`
	// Posted is set once the review post was handled.
	Posted *postedInfo `json:"posted,omitempty"`
	// ThreadsDone is set once the threads of resolved findings were replied to and
	// resolved (github.ResolveThreads, itself safe to repeat).
	ThreadsDone bool `json:"threads_done,omitempty"`
	// CheckBatches counts annotation batches already sent to the check run.
	CheckBatches int `json:"check_batches"`
}

type postedInfo struct {
	publish.Posted
	Created bool `json:"created"`
}

// readStored reads what an earlier attempt kept. A result without a report (one stored by
// an Aster from before the report was the stored form) is unreadable: the head is reviewed
// again rather than posted from nothing.
func readStored(b []byte) (storedResult, error) {
	var st storedResult
	if err := json.Unmarshal(b, &st); err != nil {
		return storedResult{}, err
	}
	if st.Report == nil {
		return storedResult{}, errors.New("no report in the stored result")
	}
	return st, nil
}

func (r *run) save(ctx context.Context) error {
	b, err := json.Marshal(r.stored)
	if err != nil {
		return err
	}
	if r.stored.Report != nil {
		r.state.Result = b
	}
	return r.w.opts.Jobs.SaveRun(ctx, r.state)
}

func (r *run) skip(reason string) (store.Finish, error) {
	r.rec.Outcome, r.rec.Reason = store.OutcomeSkipped, reason
	return store.Finish{ForceHandled: r.claim.Force}, nil
}

func (r *run) do(ctx context.Context) (store.Finish, error) {
	w, job, claim := r.w, r.job, r.claim
	api, err := w.opts.GitHub.Repo(claim.InstallationID, job.Pull.Owner, job.Pull.Repo)
	if err != nil {
		return store.Finish{}, store.Permanent(err)
	}
	r.api = api
	if only, err := r.controls(ctx); err != nil {
		return store.Finish{}, err
	} else if only {
		return r.skip("answered " + strings.Join(r.note, ", "))
	}
	pr, err := api.GetPullRequest(ctx, job.Pull.Number)
	if err != nil {
		return store.Finish{}, fmt.Errorf("get pull request: %w", err)
	}
	head := pr.Head.SHA
	r.rec.HeadSHA, r.rec.BaseSHA = head, pr.Base.SHA
	if pr.State != "open" {
		return r.skip("pull request is " + pr.State)
	}
	force := false
	if claim.Force {
		perm, err := api.GetPermission(ctx, claim.ForceBy)
		if err != nil {
			return store.Finish{}, fmt.Errorf("check permission of %s: %w", claim.ForceBy, err)
		}
		force = perm.CanTrigger()
		if !force {
			r.log.Info("review command refused: no write access", "user", claim.ForceBy, "permission", perm.Level)
			if !claim.Announced {
				// The command is this job's only reason to run: whatever the head's state
				// (never reviewed, an earlier run failed), a refused command starts nothing
				// (SECURITY.md O3). A job an event asked for goes on as that event's.
				return r.skip(fmt.Sprintf("/aster review by %s refused: needs write access", claim.ForceBy))
			}
		}
	}
	if r.pausedBy != "" && !force {
		return r.skip(fmt.Sprintf("paused by %s (/aster pause); /aster resume or /aster review reviews it", r.pausedBy))
	}
	if pr.Draft && !w.opts.ReviewDrafts && !force {
		return r.skip("draft pull request")
	}
	if head == claim.LastReviewedSHA && !force {
		if claim.RequestedSHA != "" && claim.RequestedSHA != head && !job.LastAttempt() && job.Attempt < 3 {
			// An event announced a newer head than GitHub shows yet: ask again shortly.
			return store.Finish{}, fmt.Errorf("pull request head is %s, an event announced %s: waiting for GitHub", review.ShortSHA(head), review.ShortSHA(claim.RequestedSHA))
		}
		reason := "head already reviewed"
		if claim.Force {
			reason = fmt.Sprintf("/aster review by %s refused: needs write access", claim.ForceBy)
		}
		return r.skip(reason)
	}
	since := ""
	if claim.LastReviewedSHA != "" && claim.LastReviewedSHA != head && !force {
		since = claim.LastReviewedSHA
	}

	state, found, err := w.opts.Jobs.Run(ctx, job.Pull, head)
	if err != nil {
		return store.Finish{}, err
	}
	if found && !state.CheckDone && state.CheckRunID == 0 {
		// Saved without a check run id: an attempt of that job got as far as creating one,
		// and may have, without learning its id.
		r.unrecordedBy = state.JobID
	}
	if found && state.CheckDone && state.ReviewPosted && state.JobID == job.ID {
		// This very job finished every step, and the process died before the queue
		// recorded it: record it now and post nothing again. (A run this job completed
		// without posting, superseded by a newer head it then left, is reviewed afresh.)
		r.state = state
		if state.Result != nil {
			stored, err := readStored(state.Result)
			if err != nil {
				r.log.Warn("stored review unreadable", "err", err)
			}
			r.stored = stored
		}
		r.log.Info("review already complete: recording it", "head", review.ShortSHA(head))
		return r.completed(head, claim.Force), nil
	}
	// Resume an unfinished run of this head (this job's earlier attempt, or a job that gave
	// way to this one); start afresh after a finished one (a /aster review, or a run that
	// gave up) or when a command asks for a new review.
	if found && !state.CheckDone && (!force || state.JobID == job.ID) {
		since = state.SinceSHA // keep the first attempt's scope
		if state.Result != nil {
			stored, err := readStored(state.Result)
			if err != nil {
				r.log.Warn("stored review unreadable; reviewing again", "err", err)
				state.Result, stored = nil, storedResult{}
			}
			r.stored = stored
		}
	} else {
		if found && state.CheckDone && state.Result != nil {
			// A new review of a head reviewed before (a command): what that review left
			// open is what this one re-checks.
			if st, err := readStored(state.Result); err == nil {
				r.earlier = st.Report
			}
		}
		fresh := store.Run{Pull: job.Pull, HeadSHA: head, JobID: job.ID, StartedAt: r.started}
		if found && !state.CheckDone {
			fresh.CheckRunID = state.CheckRunID // never leave a check run spinning
		}
		state = fresh
	}
	state.SinceSHA = since
	r.state = state
	r.rec.SinceSHA = since
	if force {
		r.rec.Cause = "command"
	}

	r.supersede(ctx, head)
	if r.state.CheckRunID == 0 {
		if err := r.openCheckRun(ctx, head); err != nil {
			return store.Finish{}, err
		}
	}

	in, cleanup, err := r.gather(ctx, pr, since)
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		return store.Finish{}, err
	}
	if r.state.Result == nil {
		rep := diffRefusedReport()
		if !in.tooLarge {
			if rep, err = w.opts.Reviewer.Review(ctx, in.ReviewInput); err != nil {
				return store.Finish{}, fmt.Errorf("review: %w", err)
			}
			if rep == nil {
				return store.Finish{}, errors.New("review: the reviewer returned no report")
			}
			if rep.DurationsMS == nil {
				rep.DurationsMS = map[string]int64{}
			}
			if names := unavailable(rep); len(names) > 0 {
				// The engine was unreachable or every slot stayed taken: nothing is wrong
				// with the change, so the job runs again (with backoff) instead of posting
				// a review that could not finish. The last attempt posts what it has, and
				// says why.
				if !job.LastAttempt() {
					return store.Finish{}, fmt.Errorf("review: the sandbox could not run %s now (%s); the review runs again",
						strings.Join(names, ", "), unavailableReason(rep))
				}
				rep.Notes = append(rep.Notes, fmt.Sprintf("incomplete because the sandbox was unavailable, not because of the change: "+
					"it could not run %s on any of %d attempts (%s); comment /aster review once the container engine is back",
					strings.Join(names, ", "), job.Attempt, unavailableReason(rep)))
			}
		}
		if !in.tooLarge {
			r.dismissals(ctx, rep, pr.Number)
			r.lifecycle(ctx, rep, in.ReviewInput)
		}
		r.stored = storedResult{Report: rep}
		if err := r.save(ctx); err != nil {
			return store.Finish{}, err
		}
	}
	if err := r.post(ctx, in); err != nil {
		return store.Finish{}, err
	}
	return r.completed(head, claim.Force), nil
}

// lifecycle re-checks what the review of the last reviewed head (or of this head, for a
// new review a command asked for) left open against rep
// (review.ClassifyLifecycle) and records it in rep, which is saved before anything is
// posted: a retry, a redelivery or another replica posts from the same classification.
// Without a stored earlier review (the first push, one reviewed before an upgrade, a
// store that lost it) rep has none, and nothing is resolved.
func (r *run) lifecycle(ctx context.Context, rep *review.Report, in ReviewInput) {
	head := in.Head.SHA
	prev := r.earlier
	if last := r.claim.LastReviewedSHA; prev == nil && last != "" && last != head {
		st, found, err := r.w.opts.Jobs.Run(ctx, r.job.Pull, last)
		if err != nil || !found || st.Result == nil {
			if err != nil {
				r.log.Warn("earlier review unreadable: nothing resolved this time", "head", review.ShortSHA(last), "err", err)
			}
			return
		}
		stored, err := readStored(st.Result)
		if err != nil {
			r.log.Warn("earlier review unreadable: nothing resolved this time", "head", review.ShortSHA(last), "err", err)
			return
		}
		prev = stored.Report
	}
	if prev == nil {
		return
	}
	rc := r.w.opts.Rechecker
	if p, ok := r.w.opts.Reviewer.(headRechecker); ok && rc == nil {
		rc = p.Rechecker(in)
	}
	lc, err := review.ClassifyLifecycle(ctx, prev, rep, review.LifecycleOptions{Rechecker: rc})
	if err != nil {
		r.log.Warn("re-check of the earlier review failed: nothing resolved this time", "err", err)
		return
	}
	rep.Lifecycle = lc
}

// headRechecker is a Reviewer that can re-check an earlier review's model comments on the
// head of in (PipelineReviewer).
type headRechecker interface {
	Rechecker(in ReviewInput) review.Rechecker
}

// completed fills the history record from the stored review and says the head
// is reviewed.
func (r *run) completed(head string, force bool) store.Finish {
	if rep := r.stored.Report; rep != nil {
		r.rec.Conclusion, r.rec.Findings, r.rec.Reported = rep.Conclusion.CheckConclusion(), len(rep.Findings), gate.Summarize(rep.Findings).Reported
		r.rec.Comments = len(rep.Model.Comments)
		u := rep.Model.Usage
		r.rec.InputTokens, r.rec.OutputTokens, r.rec.CostUSD = u.InputTokens, u.OutputTokens, u.CostUSD
		r.rec.DurationsMS = rep.DurationsMS
	}
	r.rec.Outcome = store.OutcomeNothingNew
	if p := r.stored.Posted; p != nil {
		r.rec.InlineComments = p.Inline
		if p.Created {
			r.rec.Outcome = store.OutcomePosted
		}
	}
	return store.Finish{ReviewedSHA: head, ForceHandled: force}
}

// gathered is a review's input with what the worker needs to place comments.
type gathered struct {
	ReviewInput
	scope publish.Scope
	// tooLarge: GitHub refused to render the diff; nothing can be placed or reviewed.
	tooLarge bool
}

// gather fetches the diffs, the base configuration and the head archive.
func (r *run) gather(ctx context.Context, pr github.PullRequest, since string) (*gathered, func(), error) {
	api := r.api
	full, err := api.GetDiff(ctx, github.DiffOptions{Number: pr.Number})
	if errors.Is(err, github.ErrTooLarge) {
		// GitHub will not render the diff (thousands of files): say so, never pass it green.
		r.log.Warn("GitHub refused to render the pull request's diff", "err", err)
		return &gathered{tooLarge: true, ReviewInput: ReviewInput{Number: pr.Number, Head: review.Revision{Ref: pr.Head.Ref, SHA: pr.Head.SHA}}}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get diff: %w", err)
	}
	// The diff by number is the pull request's as it is now, not as pr saw it: a push (or a
	// new base) landing between the two reads would pair one head's snapshot and check run
	// with another head's diff. Read the pull request again; when it moved, this attempt
	// gives way and the retry reviews the new head.
	now, err := api.GetPullRequest(ctx, pr.Number)
	if err != nil {
		return nil, nil, fmt.Errorf("get pull request: %w", err)
	}
	if now.Head.SHA != pr.Head.SHA || now.Base.SHA != pr.Base.SHA {
		return nil, nil, fmt.Errorf("the pull request moved (head %s, base %s) while its diff was read for head %s: reviewing it again",
			review.ShortSHA(now.Head.SHA), review.ShortSHA(now.Base.SHA), review.ShortSHA(pr.Head.SHA))
	}
	in := &gathered{ReviewInput: ReviewInput{
		Repository: r.job.Pull.Owner + "/" + r.job.Pull.Repo, Number: pr.Number, Title: pr.Title, Body: pr.Body,
		Author: pr.Author, Fork: pr.Fork, Base: review.Revision{Ref: pr.Base.Ref, SHA: pr.Base.SHA},
		Head: review.Revision{Ref: pr.Head.Ref, SHA: pr.Head.SHA}, Diff: full.Text, DiffTruncated: full.Truncated,
		Tests: r.w.opts.Tests,
	}}
	if since != "" {
		incr, err := api.GetDiff(ctx, github.DiffOptions{Base: since, Head: pr.Head.SHA})
		switch {
		case errors.Is(err, github.ErrNotFound):
			// The previous head is gone (a force-push GitHub already collected): review it all.
			r.log.Info("previous head not comparable; reviewing the whole pull request", "since", review.ShortSHA(since))
			since, r.state.SinceSHA, r.rec.SinceSHA = "", "", ""
		case err != nil:
			return nil, nil, fmt.Errorf("get incremental diff: %w", err)
		default:
			in.SinceSHA, in.IncrementalDiff = since, incr.Text
		}
	}
	cfg, err := api.GetFile(ctx, github.FileOptions{Path: repoconfig.FileName, Ref: pr.Base.SHA, MaxBytes: repoconfig.MaxFileBytes})
	switch {
	case errors.Is(err, github.ErrTooLarge):
		in.ConfigError = fmt.Sprintf("%s on the base revision is larger than %d bytes", repoconfig.FileName, repoconfig.MaxFileBytes)
	case err != nil:
		return nil, nil, fmt.Errorf("get %s: %w", repoconfig.FileName, err)
	case !cfg.Absent:
		in.Config = cfg.Content
	}
	parsed, err := parseDiffs(full.Text, in.IncrementalDiff, since != "")
	if err != nil {
		return nil, nil, err
	}
	in.Parsed, in.scope = parsed, scopeOf(parsed)
	if r.state.Result != nil {
		return in, nil, nil // the review is done; only posting is left
	}
	f, err := os.CreateTemp(r.w.opts.TempDir, "aster-head-*.tar.gz")
	if err != nil {
		return nil, nil, fmt.Errorf("archive file: %w", err)
	}
	cleanup := func() { os.Remove(f.Name()) }
	_, err = api.DownloadTarball(ctx, f, github.TarballOptions{Ref: pr.Head.SHA})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, cleanup, fmt.Errorf("download head archive: %w", err)
	}
	path := f.Name()
	in.OpenSnapshot = func() (io.ReadCloser, error) { return openArchive(path) }
	return in, cleanup, nil
}

// supersede completes the check runs of older heads that never finished (their job gave
// way to this newer head), so none is left spinning: a recorded one by its id, one that was
// created but never recorded by its external id.
func (r *run) supersede(ctx context.Context, head string) {
	open, err := r.w.opts.Jobs.OpenCheckRuns(ctx, r.job.Pull, head)
	if err != nil {
		r.log.Warn("list open check runs", "err", err)
		return
	}
	for _, old := range open {
		id := old.CheckRunID
		if id == 0 {
			if id, err = r.checkRunOf(ctx, old.HeadSHA, old.JobID); err != nil {
				r.log.Warn("look for the unrecorded check run of a superseded head", "head", review.ShortSHA(old.HeadSHA), "err", err)
				continue
			}
		}
		if id != 0 {
			_, err := r.api.UpdateCheckRun(ctx, id, github.CheckRunOptions{
				Name: CheckRunName, HeadSHA: old.HeadSHA, Status: "completed", Conclusion: ConclusionNeutral, CompletedAt: time.Now(),
				Title: "Superseded", Summary: fmt.Sprintf("A newer commit (%s) is reviewed instead.", safetext.Code(review.ShortSHA(head), 0)),
			})
			if err != nil {
				r.log.Warn("close superseded check run", "head", review.ShortSHA(old.HeadSHA), "err", err)
				continue
			}
		}
		old.CheckRunID, old.CheckDone = id, true
		if err := r.w.opts.Jobs.SaveRun(ctx, old); err != nil {
			r.log.Warn("record superseded check run", "err", err)
		}
	}
}

// openCheckRun gives the run its check run and records it: the one an earlier attempt
// created but did not record, if there is one; else a new one, in progress. The run is
// saved before the create, so that a crash between the create and the record leaves a
// trace: the retry, or a job reviewing a newer head (supersede), looks the run up then.
func (r *run) openCheckRun(ctx context.Context, head string) error {
	var id int64
	if r.unrecordedBy != 0 || r.job.Attempt > 1 {
		var err error
		if id, err = r.checkRunOf(ctx, head, r.job.ID, r.unrecordedBy); err != nil {
			return err
		}
	}
	if id == 0 {
		if err := r.save(ctx); err != nil {
			return err
		}
		cr, err := r.api.CreateCheckRun(ctx, github.CheckRunOptions{
			Name: CheckRunName, HeadSHA: head, Status: "in_progress", StartedAt: r.started, ExternalID: externalID(r.job.ID),
			Title: "Reviewing", Summary: fmt.Sprintf("Aster is reviewing %s.", safetext.Code(review.ShortSHA(head), 0)),
		})
		if err != nil {
			return fmt.Errorf("create check run: %w", err)
		}
		id = cr.ID
	}
	r.state.CheckRunID = id
	return r.save(ctx)
}

// externalID is the external id of the check runs a job creates: the job's id, which
// checkRunOf looks for.
func externalID(job int64) string { return fmt.Sprint(job) }

// checkRunOf finds the check run one of jobs created on head but could not record (the
// process died, or GitHub's answer was lost, between the create and the save), so a retry
// carries on with it, and a job that gives up or reviews a newer head completes it,
// instead of leaving it in progress. It returns 0 when there is none.
func (r *run) checkRunOf(ctx context.Context, head string, jobs ...int64) (int64, error) {
	runs, err := r.api.ListCheckRuns(ctx, head, CheckRunName)
	if err != nil {
		return 0, fmt.Errorf("list check runs: %w", err)
	}
	for _, cr := range runs { // newest first
		for _, job := range jobs {
			if job != 0 && cr.ExternalID == externalID(job) {
				r.log.Info("found the check run an attempt created but did not record", "check_run", cr.ID, "status", cr.Status, "head", review.ShortSHA(head))
				return cr.ID, nil
			}
		}
	}
	return 0, nil
}

// retrying says on the check run of a failed attempt that the job is tried again, and why,
// so a pull request does not show "Reviewing" through minutes of backoff. It is best effort:
// when GitHub is what failed, this may fail too, and the next attempt says more.
func (r *run) retrying(ctx context.Context, cause error) {
	if r.api == nil || r.state.CheckRunID == 0 || r.state.CheckDone {
		return
	}
	_, err := r.api.UpdateCheckRun(ctx, r.state.CheckRunID, github.CheckRunOptions{
		Name: CheckRunName, HeadSHA: r.state.HeadSHA, Status: "in_progress", Title: "Retrying",
		Summary: fmt.Sprintf("Attempt %d of %d could not finish: %s\n\nAster tries again after a pause.", r.job.Attempt, r.job.MaxAttempts,
			r.reasonText(cause)),
	})
	if err != nil {
		r.log.Debug("say on the check run that the review is retried", "err", err)
	}
}

// reasonText is an attempt's error as a check run shows it: one line, secrets redacted,
// Markdown escaped, bounded.
func (r *run) reasonText(cause error) string {
	return safetext.Escape(r.w.red.RedactString(textclip.OneLine(cause.Error(), maxReasonBytes)), 500)
}

// abandon completes the check run of a job that gives up, so it does not spin forever.
func (r *run) abandon(ctx context.Context, cause error) {
	if r.api == nil || r.state.CheckDone {
		return
	}
	if r.state.CheckRunID == 0 && r.state.HeadSHA != "" {
		// The run this attempt (or an earlier one) created but never recorded.
		id, err := r.checkRunOf(ctx, r.state.HeadSHA, r.job.ID, r.unrecordedBy)
		if err != nil {
			r.log.Warn("look for the check run of a failed review", "err", err)
		}
		r.state.CheckRunID = id
	}
	if r.state.CheckRunID == 0 {
		return
	}
	_, err := r.api.UpdateCheckRun(ctx, r.state.CheckRunID, github.CheckRunOptions{
		Name: CheckRunName, HeadSHA: r.state.HeadSHA, Status: "completed", Conclusion: ConclusionNeutral, CompletedAt: time.Now(),
		Title: "Aster could not finish the review", Summary: r.reasonText(cause),
	})
	if err != nil {
		r.log.Warn("close check run of a failed review", "err", err)
		return
	}
	r.state.CheckDone = true
	_ = r.w.opts.Jobs.SaveRun(ctx, r.state)
}

// unavailable names the analyzers, and the tests, the sandbox could not run for a
// reason that passes (gate.AnalyzerResult.Unavailable, review.TestsReport.Unavailable).
func unavailable(rep *review.Report) []string {
	var names []string
	for _, a := range rep.Analyzers {
		if a.Unavailable {
			names = append(names, a.Name)
		}
	}
	if rep.Tests != nil && rep.Tests.Unavailable {
		names = append(names, "the tests")
	}
	return names
}

// unavailableReason is the first such analyzer's (or the tests') reason, clipped.
func unavailableReason(rep *review.Report) string {
	for _, a := range rep.Analyzers {
		if a.Unavailable {
			return textclip.OneLine(a.Reason, 200)
		}
	}
	if rep.Tests != nil && rep.Tests.Unavailable {
		return textclip.OneLine(rep.Tests.Reason, 200)
	}
	return ""
}

// diffRefusedReport is the review of a pull request whose diff GitHub will not render.
func diffRefusedReport() *review.Report {
	return review.NotReviewed("no diff to review",
		"GitHub refused to render this pull request's diff (it is too large), so Aster could not review it; "+
			"split the pull request, or run `aster review` on it locally")
}

// maxReasonBytes caps the one-line texts this package makes of errors and reasons.
const maxReasonBytes = 500

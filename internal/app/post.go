package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/review"
)

// post publishes a finished review, each step once: the review with its inline comments,
// the summary comment, the check run's annotations and conclusion. Progress is saved after
// each step, so a retry picks up where the failed attempt stopped; the hidden fingerprints
// and the summary marker cover the window between a post and its save.
func (r *run) post(ctx context.Context, in *gathered) error {
	rep := r.stored.Report
	head, since := in.Head.SHA, r.state.SinceSHA
	bot, err := r.w.opts.GitHub.BotLogin(ctx)
	if err != nil {
		return fmt.Errorf("app login: %w", err)
	}
	pub := publish.Build(rep, in.scope, r.w.red)
	shown := review.RedactReport(rep, r.w.red)
	if r.stored.Posted == nil {
		opts := github.PostReviewOptions{Number: in.Number, CommitSHA: head, Body: publish.ReviewBody(head, since),
			Comments: pub.Comments, MaxInline: r.w.opts.MaxInline, BotLogin: bot}
		res, err := github.PostReview(ctx, r.api, opts)
		if errors.Is(err, github.ErrInvalid) {
			// The forge refused a placement: never lose the review over it, fold everything.
			r.log.Warn("inline comments refused; posting them in the review body", "err", err)
			res, err = github.PostReview(ctx, r.api, folded(opts, forgeName(r.w.opts.GitHub)))
		}
		if err != nil {
			return err
		}
		r.stored.Posted = &postedInfo{Posted: publish.Posted{Inline: len(res.Plan.Inline), Folded: len(res.Plan.Folded),
			Skipped: len(res.Plan.Skipped), Unanchored: pub.Unanchored}, Created: res.Posted}
		r.state.ReviewPosted, r.state.ReviewID = true, res.ReviewID
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	if !r.stored.ThreadsDone {
		res, err := github.ResolveThreads(ctx, r.api, github.ResolveOptions{Number: in.Number, BotLogin: bot,
			Resolutions: publish.Resolutions(rep.Lifecycle)})
		if err != nil {
			return err
		}
		if res != (github.ResolveResult{}) {
			r.log.Info("threads of fixed findings", "resolved", res.Resolved, "replied", res.Replied,
				"no_thread", res.NoThread, "left_to_human", res.LeftToHuman)
		}
		r.stored.ThreadsDone = true
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	sum, err := github.UpsertSummary(ctx, r.api, github.SummaryOptions{Number: in.Number, BotLogin: bot,
		Body: publish.Summary(shown, publish.SummaryOptions{Head: head, Since: since, Posted: r.stored.Posted.Posted})})
	if err != nil {
		return err
	}
	if sum.CommentID != r.state.SummaryID {
		r.state.SummaryID = sum.CommentID
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	if !r.state.CheckDone {
		if err := r.completeCheck(ctx, shown, checkAnnotations(pub.Annotations), head, since); err != nil {
			return err
		}
	}
	return nil
}

// folded is opts with every comment listed in the review body instead of on its line, for
// when the forge (named in the body) refuses inline placement; github.PostReview still skips
// what is posted.
func folded(opts github.PostReviewOptions, forge string) github.PostReviewOptions {
	opts.Body += "\n\n" + forge + " refused to place these comments on lines, so they are listed here."
	opts.Comments = slices.Clone(opts.Comments)
	for i := range opts.Comments {
		opts.Comments[i].BodyOnly = true
	}
	return opts
}

// completeCheck sends the annotations to the check run in batches of 50 and completes it
// with the last one, so the run never looks finished before all its annotations are there.
func (r *run) completeCheck(ctx context.Context, shown *review.Report, anns []github.Annotation, head, since string) error {
	title, summary, text := publish.CheckOutput(shown, head, since)
	batches := github.AnnotationBatches(anns)
	if len(batches) == 0 {
		batches = [][]github.Annotation{nil}
	}
	sent := r.stored.CheckBatches
	if r.job.Attempt > 1 {
		sent = max(sent, r.batchesOnGitHub(ctx, batches))
	}
	// When every batch is on the run the completing update may still be missing: the last
	// one is sent again without its annotations (GitHub would add them a second time).
	for i := min(sent, len(batches)-1); i < len(batches); i++ {
		anns := batches[i]
		if i < sent {
			anns = nil
		}
		// HeadSHA is not sent to GitHub on an update; Gitea's commit status needs it.
		opts := github.CheckRunOptions{Name: CheckRunName, HeadSHA: head, Title: title, Summary: summary, Text: text, Annotations: anns}
		if i == len(batches)-1 {
			opts.Status, opts.Conclusion, opts.CompletedAt = "completed", shown.Conclusion.CheckConclusion(), time.Now()
		}
		if _, err := r.api.UpdateCheckRun(ctx, r.state.CheckRunID, opts); err != nil {
			return fmt.Errorf("check run (batch %d of %d): %w", i+1, len(batches), err)
		}
		r.stored.CheckBatches = i + 1
		if i == len(batches)-1 {
			r.state.CheckDone = true
		}
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	return nil
}

// batchesOnGitHub counts the annotation batches the check run already holds, for a retry
// whose earlier attempt sent a batch and died before it saved that: GitHub adds the
// annotations of every update to the run's, so sending one again would show it twice. It
// reads the run's annotation count and returns how many whole non-empty batches, from the
// first, make up exactly that count; 0 when none do or the run cannot be read.
func (r *run) batchesOnGitHub(ctx context.Context, batches [][]github.Annotation) int {
	cr, err := r.api.GetCheckRun(ctx, r.state.CheckRunID)
	if err != nil {
		r.log.Warn("read the check run's annotations", "err", err)
		return 0
	}
	k, sum := 0, 0
	for k < len(batches) && len(batches[k]) > 0 && sum+len(batches[k]) <= cr.Annotations {
		sum += len(batches[k])
		k++
	}
	if sum != cr.Annotations {
		return 0
	}
	return k
}

// checkAnnotations are a publication's annotations as a check run's.
func checkAnnotations(anns []publish.Annotation) []github.Annotation {
	out := make([]github.Annotation, len(anns))
	for i, a := range anns {
		level := "notice"
		switch a.Severity {
		case finding.Error:
			level = "failure"
		case finding.Warning:
			level = "warning"
		}
		out[i] = github.Annotation{Path: a.Path, StartLine: a.StartLine, EndLine: a.EndLine, Level: level, Title: a.Title, Message: a.Message}
	}
	return out
}

// forgeName is how a review body names the forge: "GitHub" unless the forge says otherwise.
func forgeName(f GitHub) string {
	if n, ok := f.(interface{ ForgeName() string }); ok {
		return n.ForgeName()
	}
	return "GitHub"
}

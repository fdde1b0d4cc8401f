package github

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/publish"
)

// ReviewAPI is what PostReview needs of GitHub; *Client implements it.
type ReviewAPI interface {
	ListReviewComments(ctx context.Context, number int) ([]ReviewComment, error)
	ListReviews(ctx context.Context, number int) ([]Review, error)
	CreateReview(ctx context.Context, number int, r NewReview) (Review, error)
}

// SummaryAPI is what UpsertSummary needs of GitHub; *Client implements it.
type SummaryAPI interface {
	ListIssueComments(ctx context.Context, number int) ([]IssueComment, error)
	CreateIssueComment(ctx context.Context, number int, body string) (IssueComment, error)
	EditIssueComment(ctx context.Context, id int64, body string) (IssueComment, error)
}

// ChecksAPI is what PublishCheckRun needs of GitHub; *Client implements it.
type ChecksAPI interface {
	CreateCheckRun(ctx context.Context, opts CheckRunOptions) (CheckRun, error)
	UpdateCheckRun(ctx context.Context, id int64, opts CheckRunOptions) (CheckRun, error)
}

var (
	_ ReviewAPI  = (*Client)(nil)
	_ SummaryAPI = (*Client)(nil)
	_ ChecksAPI  = (*Client)(nil)
)

// PostReviewOptions is the input of PostReview.
type PostReviewOptions struct {
	Number    int
	CommitSHA string // head SHA the comments are anchored to
	Body      string
	Comments  []publish.Comment
	MaxInline int // 0 means publish.DefaultMaxInline
	// BotLogin is the App's own login ("slug[bot]"); only its comments count as posted.
	// Empty trusts every author, which only tests should do.
	BotLogin string
}

// PostReviewResult says what PostReview did.
type PostReviewResult struct {
	Posted   bool // false when there was nothing new to post
	ReviewID int64
	Plan     publish.ReviewPlan
}

// PostReview posts at most one COMMENT review: it reads the fingerprints already on the pull
// request (inline comments and review bodies by BotLogin), plans, and creates the review unless
// nothing is new.
func PostReview(ctx context.Context, api ReviewAPI, opts PostReviewOptions) (PostReviewResult, error) {
	posted, err := PostedFingerprints(ctx, api, opts.Number, opts.BotLogin)
	if err != nil {
		return PostReviewResult{}, err
	}
	plan := publish.PlanReview(publish.PlanOptions{Body: opts.Body, Comments: opts.Comments, Posted: posted,
		MaxInline: opts.MaxInline, MaxBodyChars: MaxBodyChars})
	res := PostReviewResult{Plan: plan}
	if len(plan.Inline) == 0 && len(plan.Folded) == 0 {
		return res, nil // nothing new: another review would only repeat the last one
	}
	body := plan.Body
	if strings.TrimSpace(body) == "" { // GitHub refuses a COMMENT review without a body
		body = fmt.Sprintf("Aster left %d comment(s).", len(plan.Inline))
	}
	inline := make([]InlineComment, len(plan.Inline))
	for i, c := range plan.Inline {
		inline[i] = InlineComment{Path: c.Path, Line: c.Line, StartLine: c.StartLine, Body: c.Body}
	}
	rev, err := api.CreateReview(ctx, opts.Number, NewReview{CommitSHA: opts.CommitSHA, Body: body, Comments: inline})
	if err != nil {
		return res, fmt.Errorf("post review: %w", err)
	}
	res.Posted, res.ReviewID = true, rev.ID
	return res, nil
}

// PostedFingerprints collects the marker ids hidden in the pull request's inline comments and
// review bodies written by botLogin (by anyone when botLogin is "").
func PostedFingerprints(ctx context.Context, api ReviewAPI, number int, botLogin string) (map[string]bool, error) {
	comments, err := api.ListReviewComments(ctx, number)
	if err != nil {
		return nil, fmt.Errorf("read posted comments: %w", err)
	}
	reviews, err := api.ListReviews(ctx, number)
	if err != nil {
		return nil, fmt.Errorf("read posted reviews: %w", err)
	}
	posted := map[string]bool{}
	add := func(author, body string) {
		if botLogin != "" && author != botLogin {
			return
		}
		for _, fp := range publish.Markers(body) {
			posted[fp] = true
		}
	}
	for _, c := range comments {
		add(c.Author, c.Body)
	}
	for _, r := range reviews {
		add(r.Author, r.Body)
	}
	return posted, nil
}

// SummaryOptions is the input of UpsertSummary.
type SummaryOptions struct {
	Number   int
	Body     string // without the marker; it is added
	BotLogin string // only a comment by this login is edited; "" trusts any author
}

// SummaryResult says which comment holds the summary now.
type SummaryResult struct {
	CommentID int64
	Created   bool
	Unchanged bool // the existing summary already had this body
}

// UpsertSummary keeps one summary comment per pull request: it edits the comment carrying
// SummaryMarker in place, or creates it.
func UpsertSummary(ctx context.Context, api SummaryAPI, opts SummaryOptions) (SummaryResult, error) {
	body := publish.Truncate(publish.WithSummaryMarker(opts.Body), MaxBodyChars)
	comments, err := api.ListIssueComments(ctx, opts.Number)
	if err != nil {
		return SummaryResult{}, fmt.Errorf("find summary: %w", err)
	}
	for _, c := range comments {
		if !publish.IsSummary(c.Body) || (opts.BotLogin != "" && c.Author != opts.BotLogin) {
			continue
		}
		if c.Body == body {
			return SummaryResult{CommentID: c.ID, Unchanged: true}, nil
		}
		if _, err := api.EditIssueComment(ctx, c.ID, body); err != nil {
			return SummaryResult{}, fmt.Errorf("edit summary: %w", err)
		}
		return SummaryResult{CommentID: c.ID}, nil
	}
	c, err := api.CreateIssueComment(ctx, opts.Number, body)
	if err != nil {
		return SummaryResult{}, fmt.Errorf("create summary: %w", err)
	}
	return SummaryResult{CommentID: c.ID, Created: true}, nil
}

// MaxBodyChars is the longest comment or review body GitHub accepts.
const MaxBodyChars = 65536

// Check-run output limits GitHub enforces.
const (
	maxCheckTitleChars   = 255
	maxCheckOutputChars  = 65535
	maxAnnotationMessage = 65535
)

// PublishCheckRun creates a check run with any number of annotations: the first batch of
// MaxAnnotationsPerRequest rides on the create, the rest follow in updates, and the requested
// Status/Conclusion is set by the last request so the run never looks finished before all its
// annotations are there.
func PublishCheckRun(ctx context.Context, api ChecksAPI, opts CheckRunOptions) (CheckRun, error) {
	opts.Title = publish.Truncate(opts.Title, maxCheckTitleChars)
	opts.Summary = publish.Truncate(opts.Summary, maxCheckOutputChars)
	opts.Text = publish.Truncate(opts.Text, maxCheckOutputChars)
	anns := make([]Annotation, len(opts.Annotations))
	for i, a := range opts.Annotations {
		a.Title = publish.Truncate(a.Title, maxCheckTitleChars)
		a.Message = publish.Truncate(a.Message, maxAnnotationMessage)
		anns[i] = a
	}
	if opts.Title == "" && len(anns) > 0 {
		opts.Title = opts.Name
	}
	batches := AnnotationBatches(anns)
	if len(batches) <= 1 {
		opts.Annotations = anns
		run, err := api.CreateCheckRun(ctx, opts)
		if err != nil {
			return run, fmt.Errorf("publish check run: %w", err)
		}
		return run, nil
	}

	first := opts
	first.Annotations = batches[0]
	first.Status, first.Conclusion, first.CompletedAt = "in_progress", "", time.Time{}
	run, err := api.CreateCheckRun(ctx, first)
	if err != nil {
		return run, fmt.Errorf("publish check run: %w", err)
	}
	for i, batch := range batches[1:] {
		upd := CheckRunOptions{Name: opts.Name, Title: opts.Title, Summary: opts.Summary, Text: opts.Text, Annotations: batch}
		if i == len(batches)-2 {
			upd.Status, upd.Conclusion, upd.CompletedAt = opts.Status, opts.Conclusion, opts.CompletedAt
		}
		if run, err = api.UpdateCheckRun(ctx, run.ID, upd); err != nil {
			return run, fmt.Errorf("publish check run annotations %d: %w", (i+1)*MaxAnnotationsPerRequest, err)
		}
	}
	return run, nil
}

package github

import (
	"context"

	gh "github.com/google/go-github/v81/github"
)

// ReviewComment is an inline comment already on a pull request.
type ReviewComment struct {
	ID       int64
	Author   string
	Body     string
	Path     string
	Line     int
	CommitID string
}

// Review is a review already on a pull request.
type Review struct {
	ID       int64
	Author   string
	Body     string
	State    string
	CommitID string
}

// IssueComment is a conversation comment on a pull request.
type IssueComment struct {
	ID     int64
	Author string
	Body   string
}

// InlineComment is one comment of a new review, anchored to the new side of the diff unless
// Side is "LEFT". StartLine > 0 makes it a multi-line comment ending at Line.
type InlineComment struct {
	Path      string
	Line      int
	StartLine int
	Side      string // RIGHT (default) or LEFT
	Body      string
}

// NewReview is a review to create. It has no event field on purpose: Aster only ever posts
// COMMENT reviews, never APPROVE or REQUEST_CHANGES, so there is nothing a caller (or a model's
// output) could set to change that.
type NewReview struct {
	CommitSHA string // the head SHA the comments are anchored to
	Body      string
	Comments  []InlineComment
}

// reviewEvent is the only review event Aster sends.
const reviewEvent = "COMMENT"

// ListReviewComments returns every inline comment on the pull request (all pages).
func (c *Client) ListReviewComments(ctx context.Context, number int) ([]ReviewComment, error) {
	return listAll(ctx, c, "list review comments",
		func(ctx context.Context, lo gh.ListOptions) ([]*gh.PullRequestComment, *gh.Response, error) {
			return c.api.PullRequests.ListComments(ctx, c.owner, c.repo, number,
				&gh.PullRequestListCommentsOptions{ListOptions: lo})
		}, reviewCommentOf)
}

func reviewCommentOf(it *gh.PullRequestComment) ReviewComment {
	return ReviewComment{ID: it.GetID(), Author: it.GetUser().GetLogin(), Body: it.GetBody(),
		Path: it.GetPath(), Line: it.GetLine(), CommitID: it.GetCommitID()}
}

// ListReviews returns every review on the pull request (all pages).
func (c *Client) ListReviews(ctx context.Context, number int) ([]Review, error) {
	return listAll(ctx, c, "list reviews",
		func(ctx context.Context, lo gh.ListOptions) ([]*gh.PullRequestReview, *gh.Response, error) {
			return c.api.PullRequests.ListReviews(ctx, c.owner, c.repo, number, &lo)
		}, reviewOf)
}

func reviewOf(r *gh.PullRequestReview) Review {
	return Review{ID: r.GetID(), Author: r.GetUser().GetLogin(), Body: r.GetBody(), State: r.GetState(),
		CommitID: r.GetCommitID()}
}

// ListIssueComments returns every conversation comment on the pull request (all pages).
func (c *Client) ListIssueComments(ctx context.Context, number int) ([]IssueComment, error) {
	return listAll(ctx, c, "list issue comments",
		func(ctx context.Context, lo gh.ListOptions) ([]*gh.IssueComment, *gh.Response, error) {
			return c.api.Issues.ListComments(ctx, c.owner, c.repo, number, &gh.IssueListCommentsOptions{ListOptions: lo})
		}, issueCommentOf)
}

func issueCommentOf(c *gh.IssueComment) IssueComment {
	return IssueComment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Body: c.GetBody()}
}

// CreateReview posts one COMMENT review with its inline comments in a single request. Rate
// limits are waited out; a 5xx is returned, not resent, since GitHub may have stored the review.
func (c *Client) CreateReview(ctx context.Context, number int, r NewReview) (Review, error) {
	req := &gh.PullRequestReviewRequest{Event: gh.Ptr(reviewEvent), Body: gh.Ptr(r.Body)}
	if r.CommitSHA != "" {
		req.CommitID = gh.Ptr(r.CommitSHA)
	}
	for _, ic := range r.Comments {
		side := ic.Side
		if side == "" {
			side = "RIGHT"
		}
		d := &gh.DraftReviewComment{Path: gh.Ptr(ic.Path), Line: gh.Ptr(ic.Line), Side: gh.Ptr(side), Body: gh.Ptr(ic.Body)}
		if ic.StartLine > 0 && ic.StartLine < ic.Line {
			d.StartLine, d.StartSide = gh.Ptr(ic.StartLine), gh.Ptr(side)
		}
		req.Comments = append(req.Comments, d)
	}
	return call(ctx, c, "create review", false, func(ctx context.Context) (*gh.PullRequestReview, *gh.Response, error) {
		return c.api.PullRequests.CreateReview(ctx, c.owner, c.repo, number, req)
	}, reviewOf)
}

// CreateIssueComment posts a conversation comment on the pull request (a 5xx is returned, not
// resent: see CreateReview).
func (c *Client) CreateIssueComment(ctx context.Context, number int, body string) (IssueComment, error) {
	return call(ctx, c, "create issue comment", false, func(ctx context.Context) (*gh.IssueComment, *gh.Response, error) {
		return c.api.Issues.CreateComment(ctx, c.owner, c.repo, number, &gh.IssueComment{Body: gh.Ptr(body)})
	}, issueCommentOf)
}

// EditIssueComment replaces the body of a conversation comment.
func (c *Client) EditIssueComment(ctx context.Context, id int64, body string) (IssueComment, error) {
	return call(ctx, c, "edit issue comment", true, func(ctx context.Context) (*gh.IssueComment, *gh.Response, error) {
		return c.api.Issues.EditComment(ctx, c.owner, c.repo, id, &gh.IssueComment{Body: gh.Ptr(body)})
	}, issueCommentOf)
}

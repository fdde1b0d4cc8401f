package gitea

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/asterhq/aster/internal/github"
)

// reviewEvent is the only review event Aster sends: it never approves or requests changes.
const reviewEvent = "COMMENT"

type wireReview struct {
	ID       int64    `json:"id"`
	User     wireUser `json:"user"`
	State    string   `json:"state"`
	Body     string   `json:"body"`
	CommitID string   `json:"commit_id"`
}

type wireReviewComment struct {
	ID       int64     `json:"id"`
	Body     string    `json:"body"`
	User     wireUser  `json:"user"`
	Resolver *wireUser `json:"resolver"`
	ReviewID int64     `json:"pull_request_review_id"`
	Path     string    `json:"path"`
	CommitID string    `json:"commit_id"`
	// Position is the line on the new side (Gitea's name), OriginalPosition on the old.
	Position         int `json:"position"`
	OriginalPosition int `json:"original_position"`
}

type wireIssueComment struct {
	ID   int64    `json:"id"`
	Body string   `json:"body"`
	User wireUser `json:"user"`
}

func reviewOf(r wireReview) github.Review {
	return github.Review{ID: r.ID, Author: r.User.Login, Body: r.Body, State: r.State, CommitID: r.CommitID}
}

// ListReviews returns every review on the pull request.
func (c *Client) ListReviews(ctx context.Context, number int) ([]github.Review, error) {
	ws, err := listAll[wireReview](ctx, c.f, "list reviews", c.path("pulls", fmt.Sprint(number), "reviews"), nil)
	if err != nil {
		return nil, err
	}
	out := make([]github.Review, len(ws))
	for i, w := range ws {
		out[i] = reviewOf(w)
	}
	return out, nil
}

// reviewComments returns the comments of every review on the pull request: Gitea lists
// them per review.
func (c *Client) reviewComments(ctx context.Context, number int) ([]wireReviewComment, error) {
	reviews, err := listAll[wireReview](ctx, c.f, "list reviews", c.path("pulls", fmt.Sprint(number), "reviews"), nil)
	if err != nil {
		return nil, err
	}
	var all []wireReviewComment
	for _, r := range reviews {
		var cs []wireReviewComment
		err := c.f.doJSON(ctx, "list review comments", http.MethodGet,
			c.path("pulls", fmt.Sprint(number), "reviews", fmt.Sprint(r.ID), "comments"), nil, &cs, true)
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
	}
	return all, nil
}

// ListReviewComments returns every inline comment on the pull request.
func (c *Client) ListReviewComments(ctx context.Context, number int) ([]github.ReviewComment, error) {
	ws, err := c.reviewComments(ctx, number)
	if err != nil {
		return nil, err
	}
	out := make([]github.ReviewComment, len(ws))
	for i, w := range ws {
		out[i] = github.ReviewComment{ID: w.ID, Author: w.User.Login, Body: w.Body, Path: w.Path, Line: w.Position, CommitID: w.CommitID}
	}
	return out, nil
}

type wireNewComment struct {
	Path string `json:"path"`
	Body string `json:"body"`
	// NewPosition is the line on the new side of the diff (Gitea's name for it).
	NewPosition int `json:"new_position"`
	OldPosition int `json:"old_position"`
}

// CreateReview posts one COMMENT review with its inline comments in one request, each on
// the new side. Gitea has no multi-line comments: a comment spanning lines is placed on
// its last line. Not repeated on a 5xx (Gitea may have stored it).
func (c *Client) CreateReview(ctx context.Context, number int, r github.NewReview) (github.Review, error) {
	req := struct {
		Event    string           `json:"event"`
		Body     string           `json:"body"`
		CommitID string           `json:"commit_id,omitempty"`
		Comments []wireNewComment `json:"comments"`
	}{Event: reviewEvent, Body: r.Body, CommitID: r.CommitSHA, Comments: []wireNewComment{}}
	for _, ic := range r.Comments {
		if ic.Side != "" && ic.Side != "RIGHT" {
			return github.Review{}, &APIError{Op: "create review", class: github.ErrInvalid, Message: "only new-side comments are posted"}
		}
		req.Comments = append(req.Comments, wireNewComment{Path: ic.Path, Body: ic.Body, NewPosition: ic.Line})
	}
	var w wireReview
	if err := c.f.doJSON(ctx, "create review", http.MethodPost, c.path("pulls", fmt.Sprint(number), "reviews"), req, &w, false); err != nil {
		return github.Review{}, err
	}
	return reviewOf(w), nil
}

// ListIssueComments returns every conversation comment on the pull request.
func (c *Client) ListIssueComments(ctx context.Context, number int) ([]github.IssueComment, error) {
	var ws []wireIssueComment
	// Gitea returns them all in one answer (no pagination on this endpoint).
	if err := c.f.doJSON(ctx, "list issue comments", http.MethodGet, c.path("issues", fmt.Sprint(number), "comments"), nil, &ws, true); err != nil {
		return nil, err
	}
	out := make([]github.IssueComment, len(ws))
	for i, w := range ws {
		out[i] = github.IssueComment{ID: w.ID, Author: w.User.Login, Body: w.Body}
	}
	return out, nil
}

// CreateIssueComment posts a conversation comment (not repeated on a 5xx).
func (c *Client) CreateIssueComment(ctx context.Context, number int, body string) (github.IssueComment, error) {
	var w wireIssueComment
	err := c.f.doJSON(ctx, "create issue comment", http.MethodPost, c.path("issues", fmt.Sprint(number), "comments"),
		map[string]string{"body": body}, &w, false)
	return github.IssueComment{ID: w.ID, Author: w.User.Login, Body: w.Body}, err
}

// EditIssueComment replaces the body of a conversation comment.
func (c *Client) EditIssueComment(ctx context.Context, id int64, body string) (github.IssueComment, error) {
	var w wireIssueComment
	err := c.f.doJSON(ctx, "edit issue comment", http.MethodPatch, c.path("issues", "comments", fmt.Sprint(id)),
		map[string]string{"body": body}, &w, true)
	return github.IssueComment{ID: w.ID, Author: w.User.Login, Body: w.Body}, err
}

// ListReviewThreads returns the pull request's conversations. Gitea has no thread object:
// a conversation is the comments of one review on one line of one file (a reply joins its
// parent's review, on its line), the first one opening it; it is resolved when that first
// comment is (Gitea's resolve endpoint marks a comment). The thread id is the first
// comment's id.
func (c *Client) ListReviewThreads(ctx context.Context, number int) ([]github.ReviewThread, error) {
	ws, err := c.reviewComments(ctx, number)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(ws, func(a, b wireReviewComment) int { return int(a.ID - b.ID) })
	type key struct {
		review   int64
		path     string
		line, ol int
	}
	idx := map[key]int{}
	var out []github.ReviewThread
	for _, w := range ws {
		k := key{w.ReviewID, w.Path, w.Position, w.OriginalPosition}
		i, ok := idx[k]
		if !ok {
			t := github.ReviewThread{ID: strconv.FormatInt(w.ID, 10), Resolved: w.Resolver != nil}
			if w.Resolver != nil {
				t.ResolvedBy = w.Resolver.Login
			}
			out = append(out, t)
			i = len(out) - 1
			idx[k] = i
		}
		out[i].Comments = append(out[i].Comments, github.ThreadComment{ID: w.ID, Author: w.User.Login, Body: w.Body})
	}
	return out, nil
}

// ResolveReviewThread resolves a conversation by its first comment (the thread id).
func (c *Client) ResolveReviewThread(ctx context.Context, threadID string) error {
	id, err := strconv.ParseInt(threadID, 10, 64)
	if err != nil || id <= 0 {
		return &APIError{Op: "resolve thread", class: github.ErrInvalid, Message: "thread id is not a comment id"}
	}
	return c.f.do(ctx, request{op: "resolve thread", method: http.MethodPost, path: c.path("pulls", "comments", fmt.Sprint(id), "resolve"), idempotent: true}, nil)
}

// ReplyToReviewComment replies in the conversation of a review comment (not repeated on
// a 5xx: ResolveThreads finds a stored reply by its marker).
func (c *Client) ReplyToReviewComment(ctx context.Context, number int, commentID int64, body string) (github.ReviewComment, error) {
	var w wireReviewComment
	err := c.f.doJSON(ctx, "reply to review comment", http.MethodPost,
		c.path("pulls", fmt.Sprint(number), "comments", fmt.Sprint(commentID), "replies"), map[string]string{"body": body}, &w, false)
	return github.ReviewComment{ID: w.ID, Author: w.User.Login, Body: w.Body, Path: w.Path, Line: w.Position, CommitID: w.CommitID}, err
}

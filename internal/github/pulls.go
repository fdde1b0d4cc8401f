package github

import (
	"context"
	"fmt"
	"io"
	"net/url"

	gh "github.com/google/go-github/v81/github"
)

// PullRequest is what the pipeline needs of a pull request.
type PullRequest struct {
	Number       int
	Title        string
	Body         string
	State        string // open, closed
	Draft        bool
	Merged       bool
	Author       string
	Head         Branch
	Base         Branch
	Fork         bool
	ChangedFiles int
	Additions    int
	Deletions    int
}

// GetPullRequest fetches one pull request of the client's repository.
func (c *Client) GetPullRequest(ctx context.Context, number int) (PullRequest, error) {
	var pr *gh.PullRequest
	err := c.retry.do(ctx, "get pull request", func(ctx context.Context) (resp *gh.Response, err error) {
		pr, resp, err = c.api.PullRequests.Get(ctx, c.owner, c.repo, number)
		return resp, err
	})
	if err != nil {
		return PullRequest{}, err
	}
	out := PullRequest{
		Number:       pr.GetNumber(),
		Title:        pr.GetTitle(),
		Body:         pr.GetBody(),
		State:        pr.GetState(),
		Draft:        pr.GetDraft(),
		Merged:       pr.GetMerged(),
		Author:       pr.GetUser().GetLogin(),
		Head:         branchOf(pr.GetHead()),
		Base:         branchOf(pr.GetBase()),
		ChangedFiles: pr.GetChangedFiles(),
		Additions:    pr.GetAdditions(),
		Deletions:    pr.GetDeletions(),
	}
	out.Fork = pr.GetHead().GetRepo() == nil || out.Head.Repo.ID != out.Base.Repo.ID
	return out, nil
}

func branchOf(b *gh.PullRequestBranch) Branch {
	r := b.GetRepo()
	return Branch{
		SHA: b.GetSHA(),
		Ref: b.GetRef(),
		Repo: Repo{
			ID:       r.GetID(),
			Owner:    r.GetOwner().GetLogin(),
			Name:     r.GetName(),
			CloneURL: r.GetCloneURL(),
			Private:  r.GetPrivate(),
		},
	}
}

// DiffOptions selects a diff. With Base and Head set it is the compare diff Base...Head (what
// changed on Head since it forked from Base: the incremental review of a synchronize); otherwise
// it is the whole pull request's diff.
type DiffOptions struct {
	Number     int
	Base, Head string
	MaxBytes   int64 // 0 means DefaultMaxDiffBytes
}

// Diff is a unified diff as GitHub renders it.
type Diff struct {
	Text      []byte
	Truncated bool // the diff was longer than MaxBytes; Text holds the first MaxBytes
}

// GetDiff fetches a pull request or compare diff, reading at most opts.MaxBytes.
func (c *Client) GetDiff(ctx context.Context, opts DiffOptions) (Diff, error) {
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxDiffBytes
	}
	var path, op string
	switch {
	case opts.Base != "" && opts.Head != "":
		path = fmt.Sprintf("repos/%s/%s/compare/%s...%s", c.owner, c.repo,
			url.PathEscape(opts.Base), url.PathEscape(opts.Head))
		op = "get compare diff"
	case opts.Number > 0:
		path = fmt.Sprintf("repos/%s/%s/pulls/%d", c.owner, c.repo, opts.Number)
		op = "get pull request diff"
	default:
		return Diff{}, &APIError{Op: "get diff", class: ErrInvalid, Message: "need a pull request number or base and head"}
	}
	var out Diff
	err := c.retry.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		req, err := c.api.NewRequest("GET", path, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/vnd.github.diff")
		resp, err := c.api.BareDo(ctx, req)
		if err != nil {
			return resp, err
		}
		defer resp.Body.Close()
		text, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
		if err != nil {
			return resp, err
		}
		out = Diff{Text: text}
		if int64(len(text)) > maxBytes {
			out = Diff{Text: text[:maxBytes], Truncated: true}
		}
		return resp, nil
	})
	return out, err
}

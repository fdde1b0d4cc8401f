package github

import (
	"context"
	"log/slog"
	"net/http"

	gh "github.com/google/go-github/v81/github"
)

// Client is the REST API as one App installation, limited to one repository (its token cannot
// reach any other). Methods retry rate limits and 5xx per the App's RetryPolicy and return
// *APIError values classified by ErrNotFound, ErrForbidden, ErrRateLimited, ... Safe for
// concurrent use.
type Client struct {
	api      *gh.Client
	download *http.Client // no credentials: archive links carry their own short-lived token
	owner    string
	repo     string
	retry    *retrier
	log      *slog.Logger
	appID    int64 // the App the client acts for; ListCheckRuns lists only its runs
}

// Repo returns the owner and name the client is scoped to.
func (c *Client) Repo() (owner, name string) { return c.owner, c.repo }

// maxListPages bounds every paginated listing (100 items a page).
const maxListPages = 100

// listAll pages through a listing until GitHub reports no next page, converting each item
// with conv.
func listAll[T, U any](ctx context.Context, c *Client, op string,
	fetch func(ctx context.Context, opts gh.ListOptions) ([]T, *gh.Response, error), conv func(T) U) ([]U, error) {
	var all []U
	opts := gh.ListOptions{PerPage: 100, Page: 1}
	for range maxListPages {
		var (
			page []T
			next int
		)
		err := c.retry.do(ctx, op, func(ctx context.Context) (*gh.Response, error) {
			items, resp, err := fetch(ctx, opts)
			if err == nil {
				page, next = items, resp.NextPage
			}
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, it := range page {
			all = append(all, conv(it))
		}
		if next == 0 {
			return all, nil
		}
		opts.Page = next
	}
	c.log.Warn("github listing cut at page cap", "op", op, "pages", maxListPages)
	return all, nil
}

package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v81/github"
)

// ReviewThread is a review thread of a pull request, read through GitHub's GraphQL API (the
// REST API has no threads and cannot resolve one).
type ReviewThread struct {
	ID       string // GraphQL node id, what ResolveReviewThread takes
	Resolved bool
	// ResolvedBy is who resolved it, as the REST API writes logins ("slug[bot]" for an App).
	ResolvedBy string
	Comments   []ThreadComment // the first opened the thread
}

// ThreadComment is one comment of a review thread.
type ThreadComment struct {
	ID     int64  // REST id (databaseId), what ReplyToReviewComment takes
	Author string // as the REST API writes it: "slug[bot]" for an App
	Body   string
}

// threadsQuery reads one page of a pull request's review threads. It is checked against
// GitHub's published schema by the fake GitHub's tests.
const threadsQuery = `query AsterReviewThreads($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          resolvedBy { __typename login }
          comments(first: 100) {
            nodes { databaseId body author { __typename login } }
          }
        }
      }
    }
  }
}`

const resolveMutation = `mutation AsterResolveThread($id: ID!) {
  resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } }
}`

type gqlActor struct {
	Typename string `json:"__typename"`
	Login    string `json:"login"`
}

// login is the actor's login as the REST API writes it: GraphQL names an App's bot by its
// slug alone.
func (a *gqlActor) login() string {
	if a == nil {
		return ""
	}
	if a.Typename == "Bot" && !strings.HasSuffix(a.Login, "[bot]") {
		return a.Login + "[bot]"
	}
	return a.Login
}

type threadsPage struct {
	Repository *struct {
		PullRequest *struct {
			ReviewThreads struct {
				PageInfo struct {
					HasNextPage bool   `json:"hasNextPage"`
					EndCursor   string `json:"endCursor"`
				} `json:"pageInfo"`
				Nodes []struct {
					ID         string    `json:"id"`
					IsResolved bool      `json:"isResolved"`
					ResolvedBy *gqlActor `json:"resolvedBy"`
					Comments   struct {
						Nodes []struct {
							DatabaseID int64     `json:"databaseId"`
							Body       string    `json:"body"`
							Author     *gqlActor `json:"author"`
						} `json:"nodes"`
					} `json:"comments"`
				} `json:"nodes"`
			} `json:"reviewThreads"`
		} `json:"pullRequest"`
	} `json:"repository"`
}

// ListReviewThreads returns every review thread of the pull request (all pages, at most
// maxListPages of 100), each with its first 100 comments: the first says who opened it
// and which finding it is about; the rest are replies, Aster's own or commands.
func (c *Client) ListReviewThreads(ctx context.Context, number int) ([]ReviewThread, error) {
	var out []ReviewThread
	after := ""
	for range maxListPages {
		vars := map[string]any{"owner": c.owner, "name": c.repo, "number": number}
		if after != "" {
			vars["after"] = after
		}
		var page threadsPage
		if err := c.graphql(ctx, "list review threads", true, threadsQuery, vars, &page); err != nil {
			return nil, err
		}
		if page.Repository == nil || page.Repository.PullRequest == nil {
			return nil, &APIError{Op: "list review threads", Status: http.StatusOK, Message: "no such pull request", class: ErrNotFound}
		}
		rt := page.Repository.PullRequest.ReviewThreads
		for _, n := range rt.Nodes {
			t := ReviewThread{ID: n.ID, Resolved: n.IsResolved, ResolvedBy: n.ResolvedBy.login()}
			for _, cm := range n.Comments.Nodes {
				t.Comments = append(t.Comments, ThreadComment{ID: cm.DatabaseID, Author: cm.Author.login(), Body: cm.Body})
			}
			out = append(out, t)
		}
		if !rt.PageInfo.HasNextPage || rt.PageInfo.EndCursor == "" {
			return out, nil
		}
		after = rt.PageInfo.EndCursor
	}
	c.log.Warn("github listing cut at page cap", "op", "list review threads", "pages", maxListPages)
	return out, nil
}

// ResolveReviewThread resolves a review thread (resolving a resolved one changes nothing).
func (c *Client) ResolveReviewThread(ctx context.Context, threadID string) error {
	var out struct {
		ResolveReviewThread *struct {
			Thread struct {
				IsResolved bool `json:"isResolved"`
			} `json:"thread"`
		} `json:"resolveReviewThread"`
	}
	if err := c.graphql(ctx, "resolve review thread", true, resolveMutation, map[string]any{"id": threadID}, &out); err != nil {
		return err
	}
	if out.ResolveReviewThread == nil || !out.ResolveReviewThread.Thread.IsResolved {
		return &APIError{Op: "resolve review thread", Status: http.StatusOK, Message: "the thread is still open", class: ErrInvalid}
	}
	return nil
}

// ReplyToReviewComment posts a reply in the thread of an inline comment (a 5xx is returned,
// not resent: see CreateReview).
func (c *Client) ReplyToReviewComment(ctx context.Context, number int, commentID int64, body string) (ReviewComment, error) {
	return call(ctx, c, "reply to review comment", false, func(ctx context.Context) (*gh.PullRequestComment, *gh.Response, error) {
		// The replies operation, not create-review-comment with in_reply_to (which GitHub's
		// description makes take a commit and a path as well).
		u := fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", url.PathEscape(c.owner), url.PathEscape(c.repo), number, commentID)
		req, err := c.api.NewRequest(http.MethodPost, u, map[string]string{"body": body})
		if err != nil {
			return nil, nil, err
		}
		var out gh.PullRequestComment
		resp, err := c.api.Do(ctx, req, &out)
		return &out, resp, err
	}, reviewCommentOf)
}

// graphqlURL is the GraphQL endpoint beside the REST root: /api/graphql on GitHub
// Enterprise Server (REST at /api/v3/), /graphql on the public API.
func (c *Client) graphqlURL() string {
	base := c.api.BaseURL.String()
	if b, ok := strings.CutSuffix(base, "/api/v3/"); ok {
		return b + "/api/graphql"
	}
	return base + "graphql"
}

// maxGraphQLBytes caps a GraphQL answer.
const maxGraphQLBytes = 16 << 20

// graphql runs one GraphQL document and decodes its data into out. GraphQL answers 200 with
// an errors list for what it refuses: NOT_FOUND and FORBIDDEN are classified as the REST
// statuses are, anything else as ErrInvalid.
func (c *Client) graphql(ctx context.Context, op string, repeatable bool, query string, vars map[string]any, out any) error {
	var body struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	var raw capBuffer
	err := c.retry.run(ctx, op, repeatable, func(ctx context.Context) (*gh.Response, error) {
		req, err := c.api.NewRequest(http.MethodPost, c.graphqlURL(), map[string]any{"query": query, "variables": vars})
		if err != nil {
			return nil, err
		}
		raw = capBuffer{max: maxGraphQLBytes}
		return c.api.Do(ctx, req, &raw)
	})
	if err != nil {
		return err
	}
	if raw.over {
		return &APIError{Op: op, Status: http.StatusOK, Message: fmt.Sprintf("answer larger than %d bytes", maxGraphQLBytes), class: ErrTooLarge}
	}
	if err := json.Unmarshal(raw.buf.Bytes(), &body); err != nil {
		return fmt.Errorf("github %s: decode answer: %w", op, err)
	}
	if len(body.Errors) > 0 {
		e := body.Errors[0]
		class := ErrInvalid
		switch e.Type {
		case "NOT_FOUND":
			class = ErrNotFound
		case "FORBIDDEN":
			class = ErrForbidden
		}
		return &APIError{Op: op, Status: http.StatusOK, Message: e.Message, class: class}
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		return fmt.Errorf("github %s: decode answer: %w", op, err)
	}
	return nil
}

// capBuffer keeps the first max bytes written to it and notes that more came.
type capBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.over = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

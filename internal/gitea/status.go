package gitea

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/asterhq/aster/internal/github"
)

// StatusContext is the context of Aster's commit status: Gitea's stand-in for a check run.
const StatusContext = "aster"

// maxStatusDescription is the longest status description Gitea stores.
const maxStatusDescription = 255

type wireStatus struct {
	ID          int64    `json:"id"`
	Status      string   `json:"status"`
	Context     string   `json:"context"`
	Description string   `json:"description"`
	Creator     wireUser `json:"creator"`
}

// statusState maps a check run's status and conclusion onto a commit status state. A
// neutral conclusion (the review could not finish, or was superseded) is a warning: Gitea
// has no neutral, and success would claim a review that did not happen.
func statusState(status, conclusion string) string {
	if status != "completed" {
		return "pending"
	}
	switch conclusion {
	case "success":
		return "success"
	case "failure", "action_required", "timed_out":
		return "failure"
	case "cancelled", "stale":
		return "error"
	}
	return "warning"
}

// CreateCheckRun sets Aster's commit status on opts.HeadSHA. A commit status has no
// annotations, text or external id: the title is its description, the findings are in the
// summary comment.
func (c *Client) CreateCheckRun(ctx context.Context, opts github.CheckRunOptions) (github.CheckRun, error) {
	return c.setStatus(ctx, "create commit status", opts)
}

// UpdateCheckRun sets the status again: a commit status is not edited, a newer one of the
// same context replaces it. opts.HeadSHA must name the commit (the App passes it). An
// update that only carries annotations (a batch before the last) changes nothing on Gitea
// and sends nothing.
func (c *Client) UpdateCheckRun(ctx context.Context, id int64, opts github.CheckRunOptions) (github.CheckRun, error) {
	if opts.Status == "" && opts.Conclusion == "" {
		return github.CheckRun{ID: id}, nil
	}
	return c.setStatus(ctx, "update commit status", opts)
}

func (c *Client) setStatus(ctx context.Context, op string, opts github.CheckRunOptions) (github.CheckRun, error) {
	if !shaPattern.MatchString(opts.HeadSHA) {
		return github.CheckRun{}, &APIError{Op: op, class: github.ErrInvalid, Message: "the head must be a commit id"}
	}
	desc := opts.Title
	if desc == "" {
		desc = "Aster"
	}
	if utf8.RuneCountInString(desc) > maxStatusDescription {
		desc = string([]rune(desc)[:maxStatusDescription-1]) + "…"
	}
	req := map[string]string{"state": statusState(opts.Status, opts.Conclusion), "context": StatusContext, "description": desc}
	if opts.DetailsURL != "" {
		req["target_url"] = opts.DetailsURL
	}
	var w wireStatus
	// Setting a status twice is harmless (the newer one shows), so it is retried.
	if err := c.f.doJSON(ctx, op, http.MethodPost, c.path("statuses", opts.HeadSHA), req, &w, true); err != nil {
		return github.CheckRun{}, err
	}
	return github.CheckRun{ID: w.ID, Status: opts.Status, Conclusion: opts.Conclusion}, nil
}

// GetCheckRun returns the status by id; a commit status holds no annotations.
func (c *Client) GetCheckRun(_ context.Context, id int64) (github.CheckRun, error) {
	return github.CheckRun{ID: id}, nil
}

// ListCheckRuns lists the bot's statuses of Aster's context on head, newest first. They
// carry no external id: a retry that lost a status's id sets the status again, which
// replaces it.
func (c *Client) ListCheckRuns(ctx context.Context, head, _ string) ([]github.CheckRun, error) {
	if !shaPattern.MatchString(head) {
		return nil, &APIError{Op: "list commit statuses", class: github.ErrInvalid, Message: "the head must be a commit id"}
	}
	bot, err := c.f.BotLogin(ctx)
	if err != nil {
		return nil, err
	}
	ws, err := c.statusesNewestFirst(ctx, head)
	if err != nil {
		return nil, err
	}
	var out []github.CheckRun
	for _, w := range ws {
		if w.Context == StatusContext && w.Creator.Login == bot {
			out = append(out, github.CheckRun{ID: w.ID, Status: w.Status})
		}
	}
	return out, nil
}

// Statuses returns the descriptions and states of Aster's statuses on head, newest first
// (for tests and `aster app` diagnostics).
func (c *Client) Statuses(ctx context.Context, head string) ([]Status, error) {
	ws, err := c.statusesNewestFirst(ctx, head)
	if err != nil {
		return nil, err
	}
	var out []Status
	for _, w := range ws {
		if w.Context == StatusContext {
			out = append(out, Status{ID: w.ID, State: w.Status, Description: w.Description, Creator: w.Creator.Login})
		}
	}
	return out, nil
}

// statusesNewestFirst lists every status on head, the newest (highest id) first:
// Gitea's own order is by update time in whole seconds, so two statuses set within
// one second come back in either order.
func (c *Client) statusesNewestFirst(ctx context.Context, head string) ([]wireStatus, error) {
	ws, err := listAll[wireStatus](ctx, c.f, "list commit statuses", c.path("statuses", head), nil)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(ws, func(x, y wireStatus) int { return cmp.Compare(y.ID, x.ID) })
	return ws, nil
}

// Status is one commit status of Aster's context.
type Status struct {
	ID          int64
	State       string
	Description string
	Creator     string
}

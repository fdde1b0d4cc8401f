package gitea

import (
	"context"
	"fmt"
	"net/http"

	"github.com/asterhq/aster/internal/github"
)

// WebhookEvents are the events Aster's webhook subscribes to: pull requests opened,
// reopened and pushed to, and comments (the /aster commands). Gitea names a pull
// request's comment and push events apart from the pull request's own.
var WebhookEvents = []string{"pull_request", "pull_request_sync", "issue_comment", "pull_request_comment"}

// Hook is a repository webhook.
type Hook struct {
	ID     int64
	URL    string
	Active bool
}

type wireHook struct {
	ID     int64             `json:"id"`
	Type   string            `json:"type"`
	Active bool              `json:"active"`
	Config map[string]string `json:"config"`
}

// EnsureWebhook makes the repository's webhook to url carry secret and WebhookEvents:
// it updates the one already pointing at url, or creates it. It needs an account with
// admin access to the repository. created reports a new hook.
func (c *Client) EnsureWebhook(ctx context.Context, url string, secret []byte) (h Hook, created bool, err error) {
	hooks, err := listAll[wireHook](ctx, c.f, "list webhooks", c.path("hooks"), nil)
	if err != nil {
		return Hook{}, false, err
	}
	cfg := map[string]string{"url": url, "content_type": "json", "secret": string(secret)}
	body := map[string]any{"type": "gitea", "active": true, "branch_filter": "*", "config": cfg, "events": WebhookEvents}
	for _, w := range hooks {
		if w.Type == "gitea" && w.Config["url"] == url {
			delete(body, "type")
			var out wireHook
			if err := c.f.doJSON(ctx, "edit webhook", http.MethodPatch, c.path("hooks", fmt.Sprint(w.ID)), body, &out, true); err != nil {
				return Hook{}, false, err
			}
			return Hook{ID: out.ID, URL: url, Active: out.Active}, false, nil
		}
	}
	var out wireHook
	if err := c.f.doJSON(ctx, "create webhook", http.MethodPost, c.path("hooks"), body, &out, false); err != nil {
		return Hook{}, false, err
	}
	return Hook{ID: out.ID, URL: url, Active: out.Active}, true, nil
}

// AddCollaborator gives login permission (read, write or admin) on the repository.
func (c *Client) AddCollaborator(ctx context.Context, login, permission string) error {
	if !validName(login) {
		return &APIError{Op: "add collaborator", class: github.ErrInvalid, Message: "invalid login"}
	}
	return c.f.do(ctx, request{op: "add collaborator", method: http.MethodPut, path: c.path("collaborators", login),
		body: map[string]string{"permission": permission}, idempotent: true}, nil)
}

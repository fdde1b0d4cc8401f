package github

import (
	"context"
	"errors"
	"strings"

	gh "github.com/google/go-github/v81/github"
)

// Permission is a user's access to the client's repository.
type Permission struct {
	User  string
	Level string // admin, write, read, none (GitHub folds maintain into write, triage into read)
	Role  string // the role name when GitHub gives one: admin, maintain, write, triage, read
}

// CanTrigger reports whether the user may ask Aster for a review: write, maintain or admin.
func (p Permission) CanTrigger() bool {
	switch p.Level {
	case "admin", "write", "maintain":
		return true
	}
	switch p.Role {
	case "admin", "write", "maintain":
		return true
	}
	return false
}

// GetPermission asks GitHub for user's permission on the repository. A user GitHub does not know
// (404) has permission "none" and no error.
func (c *Client) GetPermission(ctx context.Context, user string) (Permission, error) {
	out := Permission{User: user, Level: "none"}
	if !validLogin(user) {
		return out, &APIError{Op: "get permission", class: ErrInvalid, Message: "invalid login"}
	}
	var lvl *gh.RepositoryPermissionLevel
	err := c.retry.do(ctx, "get permission", func(ctx context.Context) (resp *gh.Response, err error) {
		lvl, resp, err = c.api.Repositories.GetPermissionLevel(ctx, c.owner, c.repo, user)
		return resp, err
	})
	if errors.Is(err, ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Level, out.Role = lvl.GetPermission(), lvl.GetRoleName()
	return out, nil
}

// validLogin accepts GitHub user and bot logins ("name", "app-slug[bot]").
func validLogin(s string) bool {
	if name, ok := strings.CutSuffix(s, "[bot]"); ok {
		s = name
	}
	return validName(s)
}

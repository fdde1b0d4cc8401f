package gitea

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/safetext"
)

type wireRepo struct {
	ID       int64    `json:"id"`
	Name     string   `json:"name"`
	FullName string   `json:"full_name"`
	Owner    wireUser `json:"owner"`
	Private  bool     `json:"private"`
	CloneURL string   `json:"clone_url"`
}

type wireBranch struct {
	SHA  string    `json:"sha"`
	Ref  string    `json:"ref"`
	Repo *wireRepo `json:"repo"`
}

type wirePull struct {
	Number       int        `json:"number"`
	Title        string     `json:"title"`
	Body         string     `json:"body"`
	State        string     `json:"state"`
	Draft        bool       `json:"draft"`
	Merged       bool       `json:"merged"`
	User         wireUser   `json:"user"`
	Head         wireBranch `json:"head"`
	Base         wireBranch `json:"base"`
	ChangedFiles int        `json:"changed_files"`
	Additions    int        `json:"additions"`
	Deletions    int        `json:"deletions"`
}

func branchOf(b wireBranch) github.Branch {
	out := github.Branch{SHA: b.SHA, Ref: b.Ref}
	if r := b.Repo; r != nil {
		out.Repo = github.Repo{ID: r.ID, Owner: r.Owner.Login, Name: r.Name, CloneURL: r.CloneURL, Private: r.Private}
	}
	return out
}

// GetPullRequest fetches one pull request of the client's repository.
func (c *Client) GetPullRequest(ctx context.Context, number int) (github.PullRequest, error) {
	var w wirePull
	if err := c.f.doJSON(ctx, "get pull request", http.MethodGet, c.path("pulls", fmt.Sprint(number)), nil, &w, true); err != nil {
		return github.PullRequest{}, err
	}
	if !shaPattern.MatchString(w.Head.SHA) || !shaPattern.MatchString(w.Base.SHA) {
		return github.PullRequest{}, &APIError{Op: "get pull request", class: github.ErrInvalid, Message: "head or base is not a commit id"}
	}
	out := github.PullRequest{Number: w.Number, Title: w.Title, Body: w.Body, State: w.State, Draft: w.Draft, Merged: w.Merged,
		Author: w.User.Login, Head: branchOf(w.Head), Base: branchOf(w.Base), ChangedFiles: w.ChangedFiles,
		Additions: w.Additions, Deletions: w.Deletions}
	out.Fork = w.Head.Repo == nil || w.Base.Repo == nil || w.Head.Repo.ID != w.Base.Repo.ID
	return out, nil
}

// GetDiff fetches the pull request's diff (opts.Number) or the compare diff Base...Head,
// reading at most opts.MaxBytes.
func (c *Client) GetDiff(ctx context.Context, opts github.DiffOptions) (github.Diff, error) {
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = github.DefaultMaxDiffBytes
	}
	r := request{method: http.MethodGet, accept: "text/plain", idempotent: true}
	switch {
	case opts.Base != "" && opts.Head != "":
		if !shaPattern.MatchString(opts.Base) || !shaPattern.MatchString(opts.Head) {
			return github.Diff{}, &APIError{Op: "get compare diff", class: github.ErrInvalid, Message: "base and head must be commit ids"}
		}
		r.op, r.path, r.query = "get compare diff", c.path("compare", opts.Base+"..."+opts.Head), url.Values{"output": {"diff"}}
	case opts.Number > 0:
		r.op = "get pull request diff"
		r.path = c.path("pulls", fmt.Sprint(opts.Number)+".diff")
	default:
		return github.Diff{}, &APIError{Op: "get diff", class: github.ErrInvalid, Message: "need a pull request number or base and head"}
	}
	var out github.Diff
	err := c.f.do(ctx, r, func(resp *http.Response) error {
		text, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
		if err != nil {
			return &APIError{Op: r.op, Message: transportMessage(err), class: github.ErrUnavailable}
		}
		out = github.Diff{Text: text}
		if int64(len(text)) > maxBytes {
			out = github.Diff{Text: text[:maxBytes], Truncated: true}
		}
		return nil
	})
	return out, err
}

// DownloadTarball streams the gzip archive of opts.Ref (a commit id) into w, through
// Gitea's archive endpoint with the bot token in the header. More than MaxBytes is an
// ErrTooLarge. A failure after bytes reached w is not retried.
func (c *Client) DownloadTarball(ctx context.Context, w io.Writer, opts github.TarballOptions) (github.Tarball, error) {
	if !shaPattern.MatchString(opts.Ref) {
		return github.Tarball{}, &APIError{Op: "download archive", class: github.ErrInvalid, Message: "the ref must be a commit id"}
	}
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = github.DefaultMaxTarballBytes
	}
	var n int64
	tooLarge := false
	r := request{op: "download archive", method: http.MethodGet, path: c.path("archive", opts.Ref+".tar.gz"),
		accept: "application/octet-stream", idempotent: true, timeout: DefaultArchiveTimeout}
	err := c.f.do(ctx, r, func(resp *http.Response) error {
		if n > 0 {
			return errors.New("gitea download archive: interrupted after data was written")
		}
		var err error
		n, err = io.Copy(w, io.LimitReader(resp.Body, maxBytes+1))
		if err != nil {
			return fmt.Errorf("gitea download archive: %s", safetext.RedactShapes(err.Error()))
		}
		if n > maxBytes {
			tooLarge = true
		}
		return nil
	})
	if tooLarge {
		return github.Tarball{Bytes: n}, &APIError{Op: "download archive", class: github.ErrTooLarge,
			Message: fmt.Sprintf("archive larger than %d bytes", maxBytes)}
	}
	return github.Tarball{Bytes: n}, err
}

type wireContent struct {
	Type     string `json:"type"`
	Size     int64  `json:"size"`
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
	SHA      string `json:"sha"`
}

// GetFile reads one regular file at a ref through the contents API; Absent when Gitea
// answers 404.
func (c *Client) GetFile(ctx context.Context, opts github.FileOptions) (github.File, error) {
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = github.DefaultMaxFileBytes
	}
	out := github.File{Path: opts.Path, Ref: opts.Ref}
	p := strings.TrimPrefix(opts.Path, "/")
	if p == "" || strings.Contains(p, "..") {
		return out, &APIError{Op: "get file", class: github.ErrInvalid, Message: "bad path"}
	}
	parts := append([]string{"contents"}, strings.Split(p, "/")...)
	var w wireContent
	err := c.f.do(ctx, request{op: "get file", method: http.MethodGet, path: c.path(parts...), query: url.Values{"ref": {opts.Ref}}, idempotent: true},
		func(resp *http.Response) error { return decodeCapped(resp, "get file", &w) })
	switch {
	case errors.Is(err, github.ErrNotFound):
		out.Absent = true
		return out, nil
	case err != nil:
		return out, err
	case w.Type != "file":
		return out, &APIError{Op: "get file", class: github.ErrInvalid, Message: "not a regular file"}
	case w.Size > maxBytes:
		return out, &APIError{Op: "get file", class: github.ErrTooLarge, Message: fmt.Sprintf("%d bytes, cap %d", w.Size, maxBytes)}
	case w.Encoding != "base64":
		return out, &APIError{Op: "get file", class: github.ErrInvalid, Message: "unknown content encoding"}
	}
	content, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(w.Content, "\n", ""))
	if err != nil {
		return out, &APIError{Op: "get file", class: github.ErrInvalid, Message: "undecodable content"}
	}
	if int64(len(content)) > maxBytes {
		return out, &APIError{Op: "get file", class: github.ErrTooLarge, Message: fmt.Sprintf("cap %d bytes", maxBytes)}
	}
	out.SHA, out.Content = w.SHA, content
	return out, nil
}

// GetPermission asks Gitea for user's permission on the repository (the collaborator
// permission endpoint). A user Gitea does not know has "none". Gitea answers this only to
// an account with admin access to the repository: without it (403) the answer is "none",
// so a command is refused, and the log says what the bot lacks.
func (c *Client) GetPermission(ctx context.Context, user string) (github.Permission, error) {
	out := github.Permission{User: user, Level: "none"}
	if !validName(user) {
		return out, &APIError{Op: "get permission", class: github.ErrInvalid, Message: "invalid login"}
	}
	var w struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	err := c.f.doJSON(ctx, "get permission", http.MethodGet, c.path("collaborators", user, "permission"), nil, &w, true)
	switch {
	case errors.Is(err, github.ErrNotFound):
		return out, nil
	case errors.Is(err, github.ErrForbidden):
		c.f.log.Warn("gitea refused to tell a user's permission: the bot account needs admin access to the repository to check who may run /aster commands; the command is refused",
			"repo", c.owner+"/"+c.repo, "user", user)
		return out, nil
	case err != nil:
		return out, err
	}
	out.Level, out.Role = permissionLevel(w.Permission), w.RoleName
	return out, nil
}

// permissionLevel maps Gitea's access names onto the App's levels (admin, write, read,
// none): the owner is an admin.
func permissionLevel(p string) string {
	switch p {
	case "owner", "admin":
		return "admin"
	case "write":
		return "write"
	case "read":
		return "read"
	}
	return "none"
}

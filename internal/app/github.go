package app

import (
	"context"
	"errors"
	"io"

	"github.com/asterhq/aster/internal/github"
)

// GitHub opens repository-scoped API clients. AppGitHub implements it over a *github.App;
// every client mints its own installation token for that one repository.
type GitHub interface {
	Repo(installationID int64, owner, repo string) (RepoAPI, error)
	// BotLogin is the login the App posts as: only its comments count as Aster's.
	BotLogin(ctx context.Context) (string, error)
}

// RepoAPI is what a review job does on one repository; *github.Client implements it.
type RepoAPI interface {
	GetPullRequest(ctx context.Context, number int) (github.PullRequest, error)
	GetDiff(ctx context.Context, opts github.DiffOptions) (github.Diff, error)
	DownloadTarball(ctx context.Context, w io.Writer, opts github.TarballOptions) (github.Tarball, error)
	GetFile(ctx context.Context, opts github.FileOptions) (github.File, error)
	GetPermission(ctx context.Context, user string) (github.Permission, error)
	github.ReviewAPI
	github.SummaryAPI
	github.ChecksAPI
	github.ThreadsAPI
	// ListCheckRuns lists the App's check runs named name on head, newest first.
	ListCheckRuns(ctx context.Context, head, name string) ([]github.CheckRun, error)
	GetCheckRun(ctx context.Context, id int64) (github.CheckRun, error)
}

var _ RepoAPI = (*github.Client)(nil)

// AppGitHub is GitHub through a registered App.
type AppGitHub struct{ App *github.App }

// Repo implements GitHub.
func (a AppGitHub) Repo(installationID int64, owner, repo string) (RepoAPI, error) {
	return a.App.Client(github.ClientOptions{InstallationID: installationID, Owner: owner, Repo: repo})
}

// BotLogin implements GitHub.
func (a AppGitHub) BotLogin(ctx context.Context) (string, error) { return a.App.BotLogin(ctx) }

// permanentGitHubError reports failures a retry cannot fix: the pull request or the
// repository is gone or out of the installation's reach, or GitHub refused what was sent.
func permanentGitHubError(err error) bool {
	return errors.Is(err, github.ErrNotFound) || errors.Is(err, github.ErrForbidden) ||
		errors.Is(err, github.ErrInvalid) || errors.Is(err, github.ErrTooLarge)
}

package app

import (
	"context"

	"github.com/asterhq/aster/internal/gitea"
)

// GiteaForge is Gitea (or Forgejo) as a bot account: the same worker, queue and posting
// as the GitHub App, through the Gitea adapter. Gitea has no installations; the id is
// ignored.
type GiteaForge struct{ Forge *gitea.Forge }

var (
	_ GitHub  = GiteaForge{}
	_ RepoAPI = (*gitea.Client)(nil)
)

// Repo implements GitHub.
func (g GiteaForge) Repo(_ int64, owner, repo string) (RepoAPI, error) {
	c, err := g.Forge.Repo(owner, repo)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ForgeName names the forge in what the App writes ("Gitea refused to place these comments").
func (g GiteaForge) ForgeName() string { return "Gitea" }

// BotLogin implements GitHub.
func (g GiteaForge) BotLogin(ctx context.Context) (string, error) { return g.Forge.BotLogin(ctx) }

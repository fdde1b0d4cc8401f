package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/asterhq/aster/internal/app"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/gitea"
	"github.com/asterhq/aster/internal/github"
)

// appForge is the forge `aster app serve` posts to and the protocol of its webhooks: a
// GitHub App (key is its private key) or a Gitea bot account (key is its token).
func appForge(set config.AppSettings, key []byte, log *slog.Logger) (app.GitHub, github.Protocol, error) {
	if set.Forge == config.ForgeGitea {
		f, err := gitea.New(gitea.Options{URL: set.ForgeURL, Token: key, Logger: log})
		if err != nil {
			return nil, github.Protocol{}, err
		}
		return app.GiteaForge{Forge: f}, gitea.WebhookProtocol(), nil
	}
	gh, err := github.NewApp(github.AppOptions{AppID: set.AppID, PrivateKey: key, BaseURL: set.GitHubAPIURL, Logger: log})
	if err != nil {
		return nil, github.Protocol{}, err
	}
	return app.AppGitHub{App: gh}, github.GitHubProtocol(), nil
}

// checkForge checks the forge's credentials at start-up (checkGitHubApp for GitHub; the bot
// account's token for Gitea), so a wrong key or token fails now with what to check.
func checkForge(ctx context.Context, forge app.GitHub, set config.AppSettings, log *slog.Logger) error {
	if g, ok := forge.(app.AppGitHub); ok {
		bot, err := checkGitHubApp(ctx, g.App, set)
		if err != nil {
			return err
		}
		log.Info("github app checked", "bot", bot, "github", set.GitHubAPIURL)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, appCheckTimeout)
	defer cancel()
	bot, err := forge.BotLogin(ctx)
	switch {
	case err == nil:
		log.Info("gitea bot account checked", "bot", bot, "gitea", set.ForgeURL)
		return nil
	case errors.Is(err, github.ErrUnauthorized), errors.Is(err, github.ErrForbidden):
		return usageErr("Gitea at %s refused the bot token in %s (create a token for the bot account with the repository, issue and user scopes: docs/gitea.md): %v",
			set.ForgeURL, set.ForgeTokenFile, err)
	case errors.Is(err, github.ErrNotFound):
		return usageErr("%s does not answer like Gitea (no /api/v1/user there; check --forge-url): %v", set.ForgeURL, err)
	default:
		return &exitError{code: ExitFailure, err: fmt.Errorf("cannot reach Gitea at %s to check the bot token (check --forge-url, the network and any proxy): %w", set.ForgeURL, err)}
	}
}

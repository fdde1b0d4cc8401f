package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/gitea"
)

// giteaSetupFile is the webhook secret `aster app setup --forge gitea` writes in the data
// directory.
const giteaSetupFile = "gitea-webhook-secret"

type giteaSetupFlags struct {
	forge, forgeURL, repo, bot, adminTokenFile string
}

func (f *giteaSetupFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.forge, "forge", config.ForgeGitHub, "github (create a GitHub App) or gitea (Gitea or Forgejo: a webhook and a bot account)")
	fl.StringVar(&f.forgeURL, "forge-url", "", "with --forge gitea: the Gitea root URL, like https://gitea.example.com/")
	fl.StringVar(&f.repo, "repo", "", "with --forge gitea and --admin-token-file: the repository (owner/name) to create the webhook on")
	fl.StringVar(&f.bot, "bot", "", "with --admin-token-file: the bot account's login, given admin access to --repo")
	fl.StringVar(&f.adminTokenFile, "admin-token-file", "", "with --forge gitea: file holding a token of a --repo admin; Aster then creates the webhook itself (never stored)")
}

func runGiteaSetup(cmd *cobra.Command, g *globals, f *setupFlags, ac config.AppConfig) error {
	gf := f.gitea
	if !strings.EqualFold(gf.forge, config.ForgeGitea) {
		return usageErr("--forge %q: want github or gitea", gf.forge)
	}
	hook, err := url.Parse(strings.TrimSpace(f.url))
	if err != nil || (hook.Scheme != "https" && hook.Scheme != "http") || hook.Host == "" || hook.User != nil {
		return usageErr("--url: want the address where Gitea reaches 'aster app serve', like https://aster.example.com (no credentials)")
	}
	hook = hook.JoinPath("webhook")
	dir := ac.DataDir
	if cmd.Flags().Changed("dir") {
		dir = f.dir
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return usageErr("--dir: %v", err)
	}
	var owner, name string
	if gf.adminTokenFile != "" {
		var ok bool
		owner, name, ok = strings.Cut(gf.repo, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			return usageErr("--repo %q: want owner/name (the repository to create the webhook on)", gf.repo)
		}
		if strings.TrimSpace(gf.forgeURL) == "" {
			return usageErr("--forge-url is required with --admin-token-file")
		}
	}
	secretFile := filepath.Join(dir, giteaSetupFile)
	secret, reused, err := giteaSecret(secretFile, f.force)
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	out := g.stdio.Stdout
	if reused {
		fmt.Fprintf(out, "Using the webhook secret already in %s (--force makes a new one).\n", secretFile)
	} else {
		fmt.Fprintf(out, "Wrote a new webhook secret to %s (mode 0600).\n", secretFile)
	}
	if gf.adminTokenFile != "" {
		if err := giteaCreateHook(cmd.Context(), gf, owner, name, hook.String(), secret, g); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, `
Create the webhook in the repository's Settings > Webhooks > Add webhook > Gitea:
  Target URL:      %s
  HTTP method:     POST, content type application/json
  Secret:          the content of %s
  Trigger on:      custom events: Pull Request, Pull Request Synchronized, Issue Comment,
                   Pull Request Comment
  Branch filter:   *
`, hook, secretFile)
	}
	fmt.Fprintf(out, `
The bot account (a Gitea user of its own, say aster-bot) needs:
  - admin access to each repository (Settings > Collaborators): write to post reviews,
    comments and the commit status, admin for Gitea to tell Aster a commenter's
    permission (without it every /aster command is refused);
  - an access token (its Settings > Applications) with the scopes write:repository,
    write:issue and read:user, in a file readable only by Aster.

Then start Aster (behind the reverse proxy of %s):

  aster app serve --forge gitea --forge-url %s --forge-token-file /etc/aster/gitea-token \
    --webhook-secret-file %s
`, f.url, orPlaceholder(gf.forgeURL, "https://gitea.example.com/"), shellQuote(secretFile))
	return nil
}

// giteaSecret returns the webhook secret in path, or writes a new one there (mode 0600)
// when there is none or force is set.
func giteaSecret(path string, force bool) (secret []byte, reused bool, err error) {
	if !force {
		b, err := os.ReadFile(path)
		if err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return []byte(strings.TrimSpace(string(b))), true, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, false, fmt.Errorf("read %s: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	secret = []byte(randomHex(32))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(secret, '\n'), 0o600); err != nil {
		return nil, false, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, false, fmt.Errorf("write %s: %w", path, err)
	}
	return secret, false, nil
}

// giteaCreateHook creates (or updates) the webhook and gives the bot its access, with an
// admin's token that is used for this and nothing else.
func giteaCreateHook(ctx context.Context, gf giteaSetupFlags, owner, name, hookURL string, secret []byte, g *globals) error {
	tok, err := readSecretFile(gf.adminTokenFile, "admin token")
	if err != nil {
		return usageErr("%v", err)
	}
	forge, err := gitea.New(gitea.Options{URL: gf.forgeURL, Token: tok})
	if err != nil {
		return usageErr("%v", err)
	}
	repo, err := forge.Repo(owner, name)
	if err != nil {
		return usageErr("--repo: %v", err)
	}
	out := g.stdio.Stdout
	if gf.bot != "" {
		if err := repo.AddCollaborator(ctx, gf.bot, "admin"); err != nil {
			return &exitError{code: ExitFailure, err: fmt.Errorf("give %s admin access to %s/%s: %w", gf.bot, owner, name, err)}
		}
		fmt.Fprintf(out, "Gave %s admin access to %s/%s.\n", gf.bot, owner, name)
	}
	h, created, err := repo.EnsureWebhook(ctx, hookURL, secret)
	if err != nil {
		return &exitError{code: ExitFailure, err: fmt.Errorf("webhook on %s/%s (the admin token needs admin access to the repository): %w", owner, name, err)}
	}
	verb := "Updated"
	if created {
		verb = "Created"
	}
	fmt.Fprintf(out, "%s the webhook %d of %s/%s: %s, events %s.\n", verb, h.ID, owner, name, hookURL, strings.Join(gitea.WebhookEvents, ", "))
	return nil
}

func orPlaceholder(s, placeholder string) string {
	if strings.TrimSpace(s) == "" {
		return placeholder
	}
	return s
}

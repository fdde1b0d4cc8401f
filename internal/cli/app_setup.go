package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/app"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/units"
)

type setupFlags struct {
	url, githubURL, org, name, listen, dir, timeout string
	force                                           bool
	gitea                                           giteaSetupFlags
}

func newAppSetupCmd(g *globals) *cobra.Command {
	f := &setupFlags{}
	cmd := &cobra.Command{
		Use:   "setup --url https://HOST [flags]",
		Short: "Create the GitHub App from Aster's manifest in your browser and store its key and webhook secret",
		Long: `Create Aster's GitHub App with GitHub's App-manifest flow. Aster serves a page on
this machine (--listen, loopback only) that sends the manifest to GitHub: the
App's webhook is --url plus /webhook, its permissions are exactly the four Aster
uses, its events pull_request, issue_comment, pull_request_review_thread and
pull_request_review_comment (a person resolving or answering one of Aster's
threads: a dismissal acts at once). Confirm on GitHub; GitHub sends
the browser back to Aster with a one-time code, which Aster exchanges for the
App's id, private key and webhook secret. They are written to the data
directory (--dir): app.pem and webhook-secret with mode 0600, github-app.json
naming them. 'aster app serve' with no --app-id reads them from there. The key
and the secret are never printed or logged.

For GitHub Enterprise Server give --github-url https://HOST/ (the API is then
https://HOST/api/v3/). --org creates the App under an organization.

--forge gitea sets Aster up for Gitea or Forgejo instead (docs/gitea.md): it
writes a new webhook secret to the data directory (gitea-webhook-secret, mode
0600; an existing one is kept unless --force) and prints the webhook to create
and the access the bot account needs. With --admin-token-file (a token of a
repository admin), --forge-url and --repo it creates the webhook itself (or
updates the one already pointing at --url) and, with --bot, gives the bot
account admin access to the repository.`,
		Example: `  aster app setup --url https://aster.example.com
  aster app setup --url https://aster.example.com --org acme
  aster app setup --url https://aster.example.com --github-url https://github.example.com/
  aster app setup --forge gitea --url https://aster.example.com
  aster app setup --forge gitea --url https://aster.example.com --forge-url https://gitea.example.com/ \
    --repo acme/widgets --bot aster-bot --admin-token-file ~/gitea-admin-token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAppSetup(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "public https URL where GitHub reaches 'aster app serve' (its reverse proxy); the webhook is URL/webhook")
	fl.StringVar(&f.githubURL, "github-url", config.DefaultGitHubWebURL, "GitHub's web address; GitHub Enterprise Server: https://HOST/")
	fl.StringVar(&f.org, "org", "", "create the App under this organization (default: your user account)")
	fl.StringVar(&f.name, "name", "", "the App's name, unique on GitHub (default: Aster and the URL's host; GitHub's page lets you change it)")
	fl.StringVar(&f.listen, "listen", config.DefaultAppSetupAddr, "loopback address of the setup page")
	fl.StringVar(&f.dir, "dir", "", "where to write the key, the secret and github-app.json (default: the data directory, where 'aster app serve' looks)")
	fl.StringVar(&f.timeout, "timeout", config.DefaultAppSetupTimeout.String(), "how long to wait for GitHub's answer")
	fl.BoolVar(&f.force, "force", false, "replace an App (or a Gitea webhook secret) already set up in --dir")
	f.gitea.register(fl)
	return cmd
}

func runAppSetup(cmd *cobra.Command, g *globals, f *setupFlags) error {
	c, ac, err := g.loadApp(cmd)
	if err != nil {
		return err
	}
	if strings.TrimSpace(f.url) == "" {
		return usageErr("--url is required: the public https address where the forge reaches 'aster app serve'")
	}
	if f.gitea.forge != config.ForgeGitHub {
		return runGiteaSetup(cmd, g, f, ac)
	}
	timeout, err := units.ParseDuration(f.timeout)
	if err != nil || timeout < time.Second {
		return usageErr("--timeout %q: want a duration of at least 1s", f.timeout)
	}
	dir := ac.DataDir
	if cmd.Flags().Changed("dir") {
		dir = f.dir
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return usageErr("--dir: %v", err)
	}
	if !f.force {
		if err := config.CheckNoAppRegistration(dir); err != nil {
			return usageErr("%v", err)
		}
	}
	name := f.name
	if name == "" {
		name = defaultAppName(f.url)
	}
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return usageErr("--listen %q: want HOST:PORT on a loopback address", f.listen)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageErr("--listen %q: the setup page carries the flow's secret state, so it listens on a loopback address only (reach it from another machine with ssh -L)", f.listen)
	}
	log := g.logger(c)
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return &exitError{code: ExitFailure, err: fmt.Errorf("listen: %w", err)}
	}
	defer ln.Close()

	var reg config.AppRegistration
	setup, err := app.NewSetup(app.SetupOptions{
		Listener: ln, Name: name, PublicURL: f.url, GitHubURL: f.githubURL, Org: f.org, Logger: log,
		Save: func(ctx context.Context, res app.SetupResult) error {
			creds := res.Credentials
			secret := creds.WebhookSecret
			if secret == "" {
				// GitHub returned none: set one, as the App, before anything depends on it.
				secret = randomHex(32)
				gh, err := github.NewApp(github.AppOptions{AppID: creds.ID, PrivateKey: creds.PEM, BaseURL: res.APIURL, Logger: log})
				if err != nil {
					return err
				}
				if err := gh.SetWebhookSecret(ctx, secret); err != nil {
					return err
				}
			}
			reg = config.AppRegistration{
				AppID: creds.ID, Slug: creds.Slug, HTMLURL: creds.HTMLURL, Owner: creds.Owner, ClientID: creds.ClientID,
				GitHubURL: res.WebURL, GitHubAPIURL: res.APIURL,
			}
			return config.WriteAppRegistration(dir, &reg, creds.PEM, []byte(secret), f.force)
		},
	})
	if err != nil {
		return usageErr("%v", err)
	}
	out := g.stdio.Stdout
	fmt.Fprintf(out, "Open this page in a browser on this machine to create the App on GitHub:\n\n  %s\n\nWaiting for GitHub (up to %s)...\n", setup.URL(), timeout)
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	res, err := setup.Serve(ctx)
	if err != nil {
		if ctx.Err() != nil && cmd.Context().Err() == nil {
			return &exitError{code: ExitFailure, err: fmt.Errorf("no answer from GitHub within %s; run aster app setup again", timeout)}
		}
		return &exitError{code: ExitFailure, err: err}
	}
	creds := res.Credentials
	fmt.Fprintf(out, "\nCreated the GitHub App %s (id %d).\n", creds.Slug, creds.ID)
	fmt.Fprintf(out, "Stored (mode 0600): %s, %s and %s\n", reg.PrivateKeyFile, reg.WebhookSecretFile,
		filepath.Join(dir, config.AppRegistrationFile))
	fmt.Fprintf(out, "\nInstall it on the repositories Aster should review:\n\n  %s\n\n", creds.InstallURL())
	serve := "aster app serve"
	if dir != mustAbs(ac.DataDir) {
		serve = "ASTER_DATA_DIR=" + shellQuote(dir) + " " + serve
	}
	fmt.Fprintf(out, "Then start it (behind the reverse proxy of %s):\n\n  %s\n", f.url, serve)
	return nil
}

// defaultAppName is "Aster" and the public URL's host, within GitHub's length limit.
func defaultAppName(public string) string {
	name := "Aster"
	if u, err := url.Parse(strings.TrimSpace(public)); err == nil && u.Hostname() != "" {
		name += " " + u.Hostname()
	}
	if r := []rune(name); len(r) > github.MaxAppNameLen {
		name = string(r[:github.MaxAppNameLen])
	}
	return strings.TrimSpace(name)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func mustAbs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

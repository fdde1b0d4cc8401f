package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/app"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/remote"
	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/textclip"
	"github.com/asterhq/aster/internal/units"
)

func newAppCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "app",
		Short: "The GitHub App (or a Gitea/Forgejo bot): set it up (setup), review pull requests from webhooks (serve), list reviews and jobs (history), dismissed findings (dismissals)",
		Args:  cobra.NoArgs,
	}
	addCommands(cmd, g, newAppSetupCmd, newAppServeCmd, newAppHistoryCmd, newAppDismissalsCmd)
	return cmd
}

type appFlags struct {
	addr, appID, privateKey, webhookSecretFile, apiURL string
	forge, forgeURL, forgeTokenFile                    string
	workers, sandboxURL, sandboxTokenFile, replicaID   string
	jobTimeout, maxAttempts, shutdownGrace             string
	webhookInflight                                    string
	drafts, tests                                      bool
	parallel                                           int
	egressAllow                                        []string
	store                                              storeFlags
}

// storeFlags are --db and --database-url: the App's store, for the commands
// that open it (app serve, app history).
type storeFlags struct{ db, databaseURL string }

func (f *storeFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.db, "db", "", "SQLite database file (default <data dir>/"+config.DefaultAppDBFile+"; ASTER_DB; the data dir is ASTER_DATA_DIR, else $XDG_DATA_HOME/aster, else ~/.local/share/aster)")
	fl.StringVar(&f.databaseURL, "database-url", "", "postgres://... shared by replicas, instead of SQLite (prefer ASTER_DATABASE_URL)")
}

// apply copies the flags given over ac.
func (f *storeFlags) apply(fl *pflag.FlagSet, ac *config.AppConfig) {
	str := changedSetter(fl)
	str("db", &ac.DB, f.db)
	str("database-url", &ac.DatabaseURL, f.databaseURL)
}

func newAppServeCmd(g *globals) *cobra.Command {
	f := &appFlags{}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the GitHub App: verified webhooks, a durable queue, reviews posted back to pull requests",
		Long: `Serve the GitHub App (docs/github-app.md walks through registering it): POST /webhook takes
GitHub's deliveries, checks X-Hub-Signature-256 against the webhook secret
before reading anything else, stores the review request durably and answers
202. Workers then review each pull request's head: the static checks and the
tests in sandboxes, the model when one is configured (llm: section), the
configuration from the base revision's .aster.yml. They post one COMMENT
review (never approve or request changes), keep one summary comment edited in
place, and set the "aster" check run, whose conclusion comes from the static
checks, never from the model. After a push only the new commits are reviewed.

Jobs live in SQLite (--db, default under the data directory) or, for several
replicas, Postgres (--database-url or ASTER_DATABASE_URL; prefer the variable:
a URL on the command line is visible to other users in ps). A job interrupted
by a crash runs again after the restart and still posts once. At most one
review per pull request runs at a time, with at most one waiting; a newer push
replaces the waiting one.

GET /healthz and /readyz answer load balancers; GET /metrics is Prometheus.
Only /webhook needs to be reachable from GitHub.

Every flag but --parallel and --egress-allow (which adds to egress.allow) has
an app: section equivalent in aster.yaml (app.addr, app.private_key_file, ...)
and the main ones an ASTER_* variable. With no App id configured, the App
'aster app setup' stored in the data directory is used (github-app.json there
names its key and webhook secret).

--forge gitea serves Gitea (or Forgejo) instead, through a bot account
(docs/gitea.md): --forge-url is its root, --forge-token-file holds the bot's
access token, and deliveries are verified by their X-Gitea-Signature (or
X-Forgejo-Signature) header. The queue, the dedupe, the incremental reviews,
the caps and the exactly-once posting are the same; a commit status "aster"
stands in for the check run.`,
		Example: `  aster app serve --app-id 123456 --private-key /etc/aster/app.pem \
    --webhook-secret-file /etc/aster/webhook-secret
  ASTER_DATABASE_URL=postgres://aster:PASSWORD@db:5432/aster aster app serve --workers 4 \
    --app-id 123456 --private-key /etc/aster/app.pem --webhook-secret-file /etc/aster/webhook-secret
  aster app serve --sandbox-url http://sandbox.internal:8080 --sandbox-token-file /etc/aster/token \
    --app-id 123456 --private-key /etc/aster/app.pem --webhook-secret-file /etc/aster/webhook-secret
  aster app serve --forge gitea --forge-url https://gitea.example.com/ \
    --forge-token-file /etc/aster/gitea-token --webhook-secret-file /etc/aster/webhook-secret`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAppServe(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", config.DefaultAppAddr, "listen address (put a TLS reverse proxy in front of it)")
	fl.StringVar(&f.appID, "app-id", "", "the GitHub App's id (ASTER_APP_ID)")
	fl.StringVar(&f.privateKey, "private-key", "", "the App's private key, a PEM file readable only by aster (ASTER_APP_PRIVATE_KEY_FILE)")
	fl.StringVar(&f.webhookSecretFile, "webhook-secret-file", "", "file holding the App's webhook secret (ASTER_APP_WEBHOOK_SECRET_FILE)")
	fl.StringVar(&f.apiURL, "github-api-url", config.DefaultGitHubAPIURL, "GitHub's REST API root; GitHub Enterprise Server: https://HOST/api/v3/")
	fl.StringVar(&f.forge, "forge", config.ForgeGitHub, "github (a GitHub App) or gitea (Gitea or Forgejo through a bot account; ASTER_APP_FORGE)")
	fl.StringVar(&f.forgeURL, "forge-url", "", "with --forge gitea: the Gitea root URL, like https://gitea.example.com/ (ASTER_APP_FORGE_URL)")
	fl.StringVar(&f.forgeTokenFile, "forge-token-file", "", "with --forge gitea: file holding the bot account's access token, readable only by aster (ASTER_APP_FORGE_TOKEN_FILE)")
	f.store.register(fl)
	intStringVar(fl, &f.workers, "workers", strconv.Itoa(config.DefaultAppWorkers), "pull requests reviewed at once by this process")
	parallelVar(fl, &f.parallel, "analyzers run at once within one review")
	fl.StringVar(&f.sandboxURL, "sandbox-url", "", "run sandboxes on a remote 'aster sandbox serve' at URL (default: in this process, on the local engine)")
	fl.StringVar(&f.sandboxTokenFile, "sandbox-token-file", "", "bearer token file for --sandbox-url")
	fl.BoolVar(&f.drafts, "review-drafts", false, "review draft pull requests too (default: skip them until ready for review)")
	fl.BoolVar(&f.tests, "tests", false, "run every repository's tests (detected when .aster.yml names no tests.command); default: only where it does")
	fl.StringVar(&f.replicaID, "replica-id", "", "this replica's name among replicas sharing a database (default: the host name; never two live processes with one)")
	fl.StringVar(&f.jobTimeout, "job-timeout", config.DefaultAppJobTimeout.String(), "longest one review may run before it is cancelled and retried")
	intStringVar(fl, &f.maxAttempts, "max-attempts", strconv.Itoa(config.DefaultAppMaxAttempts), "attempts per review job before it is given up (and said so on the check run)")
	fl.StringVar(&f.webhookInflight, "webhook-inflight-bytes", units.FormatBytes(config.DefaultAppWebhookInflightBytes),
		"webhook body bytes read at once across all deliveries (at least 25MiB); past it a delivery gets 429 before its body is read")
	fl.StringVar(&f.shutdownGrace, "shutdown-grace", config.DefaultAppShutdownWait.String(), "on SIGTERM, how long running reviews may finish; the rest run again at the next start")
	egressAllowVar(fl, &f.egressAllow)
	return cmd
}

func runAppServe(cmd *cobra.Command, g *globals, f *appFlags) error {
	c, ac, err := g.loadApp(cmd)
	if err != nil {
		return err
	}
	fl := cmd.Flags()
	str := changedSetter(fl)
	str("addr", &ac.Addr, f.addr)
	str("app-id", &ac.AppID, f.appID)
	str("private-key", &ac.PrivateKeyFile, f.privateKey)
	str("webhook-secret-file", &ac.WebhookSecretFile, f.webhookSecretFile)
	str("github-api-url", &ac.GitHubAPIURL, f.apiURL)
	str("forge", &ac.Forge, f.forge)
	str("forge-url", &ac.ForgeURL, f.forgeURL)
	str("forge-token-file", &ac.ForgeTokenFile, f.forgeTokenFile)
	f.store.apply(fl, &ac)
	str("workers", &ac.Workers, f.workers)
	str("sandbox-url", &ac.SandboxURL, f.sandboxURL)
	str("sandbox-token-file", &ac.SandboxTokenFile, f.sandboxTokenFile)
	str("replica-id", &ac.ReplicaID, f.replicaID)
	str("job-timeout", &ac.JobTimeout, f.jobTimeout)
	str("max-attempts", &ac.MaxAttempts, f.maxAttempts)
	str("shutdown-grace", &ac.ShutdownGrace, f.shutdownGrace)
	str("webhook-inflight-bytes", &ac.WebhookInflightBytes, f.webhookInflight)
	if fl.Changed("review-drafts") {
		ac.ReviewDrafts = f.drafts
	}
	if fl.Changed("tests") {
		ac.Tests = f.tests
	}
	// No App id configured: the one `aster app setup` stored in the data directory, if any.
	if !strings.EqualFold(strings.TrimSpace(ac.Forge), config.ForgeGitea) {
		if _, err := ac.ApplyRegistration(); err != nil {
			return usageErr("%v", err)
		}
	}
	if err := checkParallel(f.parallel); err != nil {
		return err
	}
	set, err := ac.Parse()
	if err != nil {
		return usageErr("%v", err)
	}
	var key []byte // the App's private key, or the Gitea bot's token
	if set.Forge == config.ForgeGitea {
		if key, err = readSecretFile(set.ForgeTokenFile, "forge token"); err != nil {
			return usageErr("%v", err)
		}
		if key = []byte(strings.TrimSpace(string(key))); len(key) == 0 {
			return usageErr("forge token file %s is empty", set.ForgeTokenFile)
		}
	} else if key, err = readSecretFile(set.PrivateKeyFile, "private key"); err != nil {
		return usageErr("%v", err)
	}
	secret, err := readSecretFile(set.WebhookSecretFile, "webhook secret")
	if err != nil {
		return usageErr("%v", err)
	}
	secret = []byte(strings.TrimSpace(string(secret)))
	if len(secret) == 0 {
		return usageErr("webhook secret file %s is empty", set.WebhookSecretFile)
	}
	limits, err := c.SandboxLimits()
	if err != nil {
		return usageErr("limits: %v", trimInvalid(err))
	}

	// Every secret this process holds is kept out of its logs as a last line of defence
	// (the code never logs them in the first place).
	secrets := [][]byte{key, secret}
	if lc, err := c.LLMSection(g.stdio.Getenv); err == nil {
		if ls, err := lc.Parse(); err == nil {
			for _, v := range ls.SecretValues(g.stdio.Getenv) {
				secrets = append(secrets, []byte(v))
			}
		}
	}
	values := make([]string, len(secrets))
	for i, s := range secrets {
		values[i] = string(s)
	}
	log := slog.New(safetext.RedactingHandler(g.logger(c).Handler(), safetext.NewRedactor(values)))
	if _, err := newReviewer(c, log, g.stdio.Getenv, modelFlags{}, reviewSandbox{}); err != nil {
		return usageErr("%v", err)
	}
	egressPol, err := egressPolicy(c, f.egressAllow, log)
	if err != nil {
		return err
	}
	keyFile := set.PrivateKeyFile
	if set.Forge == config.ForgeGitea {
		keyFile = set.ForgeTokenFile
	}
	if fi, err := os.Stat(keyFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("the key or token file is readable by other users; chmod 600 it", "file", keyFile)
	}
	ctx := cmd.Context()

	// Bind before starting anything, so a taken address fails fast.
	ln, err := net.Listen("tcp", set.Addr)
	if err != nil {
		return &exitError{code: ExitFailure, err: fmt.Errorf("listen: %w", err)}
	}
	defer ln.Close()

	forge, webhook, err := appForge(set, key, log)
	if err != nil {
		return usageErr("%v", err)
	}

	st, err := store.Open(ctx, store.Options{Path: set.DB, URL: set.DatabaseURL, Logger: log, Queue: store.QueueOptions{
		ClientID: set.ReplicaID, Workers: set.Workers, JobTimeout: set.JobTimeout, MaxAttempts: set.MaxAttempts,
		RetryBase: set.RetryBase, RetryMax: set.RetryMax, Lease: set.Lease,
	}})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return usageErr("%v", err)
		}
		return &exitError{code: ExitFailure, err: err}
	}
	defer st.Close()
	// The App's id, its key and the API (or the Gitea bot's token) are checked now: a wrong
	// key or an unreachable API fails here with the reason, instead of the first webhook
	// failing later.
	if err := checkForge(ctx, forge, set, log); err != nil {
		return err
	}
	sb, ready, closeSB, err := appSandbox(ctx, c, set, limits, f.parallel, log)
	if err != nil {
		return err
	}
	defer closeSB()
	image := config.DefaultImage
	if len(c.Images) > 0 {
		image = c.Images[0]
	}
	metrics := app.NewMetrics()
	if err := sandboxapi.RegisterEgressMetrics(metrics.Registry(), egressPol); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	if mgr, ok := sb.(*sandbox.Manager); ok { // sandboxes in this process: their gauges here
		if err := sandboxapi.RegisterManagerGauges(metrics.Registry(), mgr.Stats); err != nil {
			return &exitError{code: ExitFailure, err: err}
		}
	}
	runner := gate.NewRunner(sb, gate.RunnerOptions{Image: image, Limits: limits, Parallel: f.parallel, Logger: log,
		Progress: metrics.ObserveAnalyzer})
	tests, _, err := testRunner(c, egressPol, sb, log)
	if err != nil {
		return err
	}
	evidenceEng, evidenceRuns, err := evidenceEngine(c, g.stdio.Getenv, egressPol, sb, image, limits, log)
	if err != nil {
		return err
	}
	reviewer := app.NewPipelineReviewer(app.PipelineOptions{
		Evidence: evidenceEng, MaxEvidenceRuns: evidenceRuns,
		Gate:  runner,
		Tests: &review.SandboxTests{Sandbox: sb, Image: image, Limits: limits, Runner: tests},
		// One model client per review: its call, token and cost caps are per review.
		Model: func() (review.Reviewer, error) {
			return newReviewer(c, log, g.stdio.Getenv, modelFlags{}, reviewSandbox{})
		},
	})

	where := set.DB
	if set.DatabaseURL != "" {
		where = "postgres"
	}
	log.Info("aster app starting", "version", Version(), "forge", set.Forge, "app_id", set.AppID, "github", set.GitHubAPIURL, "forge_url", set.ForgeURL, "db", where,
		"workers", set.Workers, "replica", set.ReplicaID, "sandbox", map[bool]string{true: "remote", false: "local"}[set.SandboxURL != ""])
	err = app.Serve(ctx, app.ServeOptions{
		Listener: ln, WebhookSecret: secret, Store: st, GitHub: forge, Webhook: webhook, Reviewer: reviewer,
		ReviewDrafts: set.ReviewDrafts, Tests: set.Tests, Secrets: secrets, ShutdownGrace: set.ShutdownGrace,
		WebhookInflightBytes: set.WebhookInflightBytes, Ready: ready, Logger: log, Metrics: metrics,
	})
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	return nil
}

// appCheckTimeout bounds the start-up check of the App against the API.
const appCheckTimeout = 20 * time.Second

// checkGitHubApp authenticates as the App (GET /app with its JWT) and returns its bot login.
// A refused key or an unknown App is a configuration error (exit 2); an API that does not
// answer is a failure (exit 1). Each says what to check.
func checkGitHubApp(ctx context.Context, gh *github.App, set config.AppSettings) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, appCheckTimeout)
	defer cancel()
	bot, err := gh.BotLogin(ctx)
	switch {
	case err == nil:
		return bot, nil
	case errors.Is(err, github.ErrUnauthorized):
		return "", usageErr("the GitHub API at %s refused App %d's credentials: the private key %s is not that App's key, or the App was deleted (check --app-id and --private-key, or run 'aster app setup'): %v",
			set.GitHubAPIURL, set.AppID, set.PrivateKeyFile, err)
	case errors.Is(err, github.ErrNotFound):
		return "", usageErr("the GitHub API at %s has no App %d (check --app-id, and --github-api-url for GitHub Enterprise): %v",
			set.GitHubAPIURL, set.AppID, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, github.ErrUnavailable), errors.Is(err, github.ErrRateLimited):
		return "", &exitError{code: ExitFailure, err: fmt.Errorf("cannot reach the GitHub API at %s to check App %d (check --github-api-url, the network and any proxy): %w",
			set.GitHubAPIURL, set.AppID, err)}
	default:
		return "", &exitError{code: ExitFailure, err: fmt.Errorf("checking App %d against the GitHub API at %s: %w", set.AppID, set.GitHubAPIURL, err)}
	}
}

// appSandbox is where reviews run repository code: a remote orchestrator, or a Manager on
// the local engine with the leaked-sandbox reaper.
func appSandbox(ctx context.Context, c config.Config, set config.AppSettings, limits sandbox.Limits, parallel int,
	log *slog.Logger) (gate.Sandbox, func(context.Context) error, func(), error) {
	if set.SandboxURL != "" {
		token := ""
		if set.SandboxTokenFile != "" {
			var err error
			if token, err = client.ReadTokenFile(set.SandboxTokenFile); err != nil {
				return nil, nil, nil, usageErr("%v", err)
			}
		}
		cl, err := client.New(client.Options{BaseURL: set.SandboxURL, Token: token, UserAgent: "aster-app/" + Version()})
		if err != nil {
			return nil, nil, nil, usageErr("--sandbox-url: %v", err)
		}
		ready := func(ctx context.Context) error {
			_, err := cl.Ready(ctx)
			return err
		}
		return remote.Sandbox{Client: cl}, ready, func() {}, nil
	}
	rt, closeRT, err := startRuntime(c, log, ExitSandbox)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := rt.Check(ctx); err != nil {
		// Serve anyway: webhooks are stored, and reviews retry until the engine is back.
		log.Warn("container engine unreachable at start-up; reviews wait for it", "err", err)
	}
	mgr, err := newManager(c, rt, sandbox.ManagerOptions{
		Defaults:      limits,
		MaxConcurrent: set.Workers * parallel, QueueSize: 64 * parallel, QueueTimeout: set.JobTimeout,
		Logger: log,
	}, ExitFailure)
	if err != nil {
		closeRT()
		return nil, nil, nil, err
	}
	if err := startReaper(ctx, c, rt, mgr, log); err != nil {
		closeRT()
		return nil, nil, nil, usageErr("%v", err)
	}
	closeAll := func() {
		closeManager(ctx, mgr, log)
		closeRT()
	}
	return mgr, rt.Check, closeAll, nil
}

// readSecretFile reads a file holding a secret, never quoting its content in errors.
func readSecretFile(path, what string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(b) > 1<<20 {
		return nil, fmt.Errorf("%s file %s is larger than 1 MiB", what, path)
	}
	return b, nil
}

type historyFlags struct {
	repo, outcome string
	pr, limit     int
	json, pending bool
	store         storeFlags
}

func newAppHistoryCmd(g *globals) *cobra.Command {
	f := &historyFlags{}
	cmd := &cobra.Command{
		Use:   "history [flags]",
		Short: "List the reviews the App ran: pull request, head, outcome, findings, tokens, cost, time",
		Long: `List the review history recorded by 'aster app serve', newest first: for each
run the pull request, the head reviewed (and the previous head for an
incremental review), what triggered it, the outcome (posted, nothing_new,
skipped, failed) with the reason, the check's conclusion, findings on the
change, comments posted inline, model tokens and cost, and how long it took.
In the table, without --outcome, it first lists the jobs not finished yet:
queued, running, or waiting for a retry, with their attempt and the last
error. --pending lists only those, also with --json, where each state is the
queue's own: available, pending, scheduled, retryable or running.
It reads the same database as the server (--db or --database-url, or the
app: section), and can run while the server does.`,
		Example: `  aster app history
  aster app history --repo acme/widgets --pr 42
  aster app history --outcome failed --json
  aster app history --pending`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAppHistory(cmd, g, f) },
	}
	fl := cmd.Flags()
	f.store.register(fl)
	fl.StringVar(&f.repo, "repo", "", "only this repository (owner/name)")
	fl.IntVar(&f.pr, "pr", 0, "only this pull request number (with --repo)")
	fl.StringVar(&f.outcome, "outcome", "", "only this outcome: posted, nothing_new, skipped, failed")
	fl.IntVar(&f.limit, "limit", 50, "at most this many reviews")
	fl.BoolVar(&f.json, "json", false, "one JSON object per line instead of a table")
	fl.BoolVar(&f.pending, "pending", false, "only the jobs not finished: queued, running, retrying (with --json: one object per job)")
	return cmd
}

func runAppHistory(cmd *cobra.Command, g *globals, f *historyFlags) error {
	_, ac, err := g.loadApp(cmd)
	if err != nil {
		return err
	}
	f.store.apply(cmd.Flags(), &ac)
	db, dbURL, err := ac.ParseStore()
	if err != nil {
		return usageErr("%v", err)
	}
	if f.repo != "" && strings.Count(f.repo, "/") != 1 {
		return usageErr("--repo %q: want owner/name", f.repo)
	}
	if f.limit < 1 || f.limit > 100000 {
		return usageErr("--limit %d: want 1 to 100000", f.limit)
	}
	switch f.outcome {
	case "", store.OutcomePosted, store.OutcomeNothingNew, store.OutcomeSkipped, store.OutcomeFailed:
	default:
		return usageErr("--outcome %q: want posted, nothing_new, skipped or failed", f.outcome)
	}
	st, err := store.Open(cmd.Context(), store.Options{Path: db, URL: dbURL, ReadOnly: true})
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	defer st.Close()
	out := g.stdio.Stdout
	var pending []store.PendingJob
	if f.pending || (!f.json && f.outcome == "") {
		if pending, err = st.Pending(cmd.Context(), f.repo, f.pr, f.limit); err != nil {
			return &exitError{code: ExitFailure, err: err}
		}
	}
	if f.pending {
		if f.json {
			return writeJSONLines(out, pending)
		}
		if len(pending) == 0 {
			fmt.Fprintln(out, "no jobs queued, running or retrying")
			return nil
		}
		return writePending(out, pending)
	}
	recs, err := st.History(cmd.Context(), store.HistoryFilter{Repository: f.repo, Number: f.pr, Outcome: f.outcome, Limit: f.limit})
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	if len(pending) > 0 {
		if err := writePending(out, pending); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	if f.json {
		return writeJSONLines(out, recs)
	}
	if len(recs) == 0 {
		fmt.Fprintln(out, "no reviews recorded")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FINISHED\tPULL REQUEST\tHEAD\tSINCE\tCAUSE\tOUTCOME\tCHECK\tFINDINGS\tINLINE\tTOKENS\tCOST\tTIME\tREASON")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s#%d\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%d\t$%.4f\t%.1fs\t%s\n",
			r.FinishedAt.Local().Format("2006-01-02 15:04:05"), r.Repository, r.Number, review.ShortSHA(r.HeadSHA), dash(review.ShortSHA(r.SinceSHA)),
			dash(r.Cause), r.Outcome, dash(r.Conclusion), r.Reported, r.Findings, r.InlineComments,
			r.InputTokens+r.OutputTokens, r.CostUSD, float64(r.DurationMS)/1000, textclip.OneLine(r.Reason, 80))
	}
	return tw.Flush()
}

// writePending prints the unfinished jobs: what waits, what runs, what failed and when it
// runs again.
func writePending(out io.Writer, jobs []store.PendingJob) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUED\tPULL REQUEST\tSTATE\tATTEMPT\tNEXT RUN\tLAST ERROR")
	for _, j := range jobs {
		state := j.State
		switch state {
		case "available", "pending", "scheduled":
			state = "queued"
		case "retryable":
			state = "retrying"
		}
		next := "-"
		if j.State != "running" {
			next = j.ScheduledAt.Local().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s#%d\t%s\t%d/%d\t%s\t%s\n", j.CreatedAt.Local().Format("2006-01-02 15:04:05"),
			j.Repository, j.Number, state, j.Attempt, j.MaxAttempts, next, dash(textclip.OneLine(j.LastError, 100)))
	}
	return tw.Flush()
}

// writeJSONLines writes one JSON object a line (--json of app history).
func writeJSONLines[T any](out io.Writer, items []T) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return &exitError{code: ExitFailure, err: err}
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

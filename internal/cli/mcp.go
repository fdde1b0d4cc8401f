package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/mcpserver"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/reaper"
	"github.com/asterhq/aster/internal/sandbox/remote"
	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/units"
)

type mcpFlags struct {
	serveSectionFlags
	http, sandboxURL string
	allowDirs        []string
	progressInterval time.Duration
	// The session bounds of --http (the mcp: section, ASTER_MCP_*).
	maxSessions, maxSessionsPerToken, sessionTimeout string
}

func newMCPCmd(g *globals) *cobra.Command {
	f := &mcpFlags{}
	cmd := &cobra.Command{
		Use:   "mcp [--http ADDR [--token-file F]] [--sandbox-url URL]",
		Short: "Serve the sandbox to AI agents as MCP tools (stdio, or streamable HTTP)",
		Long: `Serve Aster's sandbox over the Model Context Protocol, so any MCP client (Claude
Desktop, Claude Code, an agent framework) can run code safely.

Tools:
  execute    run argv, or a script with its interpreter, with files, stdin,
             env and limits, in a fresh hardened sandbox; returns status, exit
             code, stdout and stderr (capped, truncation stated), timings
  run_tests  run a project's tests (command detected or given) over a
             snapshot: a directory under --allow-dir, files, or a tar;
             returns the parsed summary (passed, failed, failing tests)
  validate   the static-analysis gate (gitleaks, shellcheck, bandit,
             ast-grep, gosec, eslint; semgrep where the image has it and
             the snapshot has .semgrep/ rules) over a snapshot; returns
             findings and each analyzer's status

By default the server speaks MCP on stdin/stdout (the client starts it as a
subprocess). With --http ADDR it serves the streamable HTTP transport at
http://ADDR/mcp instead; a non-loopback ADDR requires --token-file (bearer
tokens, one per line). Requests whose Host is not localhost on a loopback
listener are refused (DNS-rebinding protection). Sessions are capped per
token (--max-sessions-per-token) and in all (--max-sessions): an initialize
past a cap gets 429 or 503 with a JSON-RPC error that names it; a session
without a request for --session-timeout is closed.

Sandboxes run in-process on the configured runtime (Docker by default); the
leaked-sandbox reaper runs at start and every reaper period. With
--sandbox-url they run on a remote 'aster sandbox serve' instead, which is
sent the first token of --token-file. The token file, admission (--max-
concurrent, --queue) and ceilings are shared with 'aster sandbox serve'
(the serve: section of aster.yaml and its ASTER_* variables).

Each call may lower or raise its limits up to the ceilings (--max-*); calls
over a ceiling, with bad input, or while every slot and queue place is taken
get an MCP tool error with a clear message. Progress notifications are sent
while a run goes when the client asks for them; cancelling the call destroys
the sandbox.`,
		Example: `  aster mcp
  aster mcp --http 127.0.0.1:8765
  aster mcp --http 0.0.0.0:8765 --token-file /etc/aster/tokens
  aster mcp --max-timeout 2m --max-memory 1g
  aster mcp --sandbox-url http://sandbox-host:8080 --token-file /etc/aster/tokens`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCP(cmd, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.http, "http", "", "serve streamable HTTP at ADDR (path /mcp) instead of stdio, e.g. 127.0.0.1:8765")
	fl.StringVar(&f.tokenFile, "token-file", "", "accepted bearer tokens, one per line, as for 'aster sandbox serve' (required for a non-loopback --http address)")
	fl.StringVar(&f.sandboxURL, "sandbox-url", "", "run sandboxes on a remote 'aster sandbox serve' at URL instead of in-process (it is sent the first token of --token-file)")
	fl.StringArrayVar(&f.allowDirs, "allow-dir", nil, "directory whose projects run_tests and validate may read by path (repeatable; default with stdio: the working directory; 'none' for none)")
	fl.StringVar(&f.maxConcurrent, "max-concurrent", "auto", "sandboxes running at once, in-process (auto: sized from host memory)")
	intStringVar(fl, &f.queue, "queue", "", fmt.Sprintf("calls that may wait for a sandbox slot before 'busy' (default %d × max-concurrent)", config.DefaultQueuePerSlot))
	fl.StringVar(&f.queueTimeout, "queue-timeout", config.DefaultQueueTimeout.String(), "how long a call may wait for a slot")
	fl.StringVar(&f.maxBody, "max-body", units.FormatBytes(config.DefaultMaxBodyBytes), "largest HTTP request body (the files of one call travel in it)")
	fl.StringVar(&f.maxBodyInFlight, "max-body-in-flight", "", fmt.Sprintf("HTTP request-body bytes being served at once; 429 past it (default %d × --max-body)", config.DefaultMCPBodiesInFlight))
	f.ceilings.register(fl, func(limit string) string { return "ceiling of a call's limits." + limit })
	intStringVar(fl, &f.maxSessions, "max-sessions", strconv.Itoa(config.DefaultMCPMaxSessions), "with --http: sessions open at once; an initialize past it gets 503")
	intStringVar(fl, &f.maxSessionsPerToken, "max-sessions-per-token", strconv.Itoa(config.DefaultMCPSessionsPerToken), "with --http: sessions one bearer token may hold (without tokens: all clients together); an initialize past it gets 429")
	fl.StringVar(&f.sessionTimeout, "session-timeout", config.DefaultMCPSessionTimeout.String(), "with --http: a session without a request for this long is closed")
	fl.DurationVar(&f.progressInterval, "progress-interval", config.DefaultMCPProgressInterval, "period of progress notifications")
	_ = fl.MarkHidden("progress-interval")
	return cmd
}

func runMCP(cmd *cobra.Command, g *globals, f *mcpFlags) error {
	c, err := g.load(cmd)
	if err != nil {
		return err
	}
	mc, err := c.MCPSection(g.stdio.Getenv)
	if err != nil {
		return usageErr("%v", err)
	}
	sc, err := c.ServeSection(g.stdio.Getenv)
	if err != nil {
		return usageErr("%v", err)
	}
	fl := cmd.Flags()
	str := changedSetter(fl)
	str("http", &mc.HTTP, f.http)
	str("sandbox-url", &mc.SandboxURL, f.sandboxURL)
	str("max-sessions", &mc.MaxSessions, f.maxSessions)
	str("max-sessions-per-token", &mc.MaxSessionsPerToken, f.maxSessionsPerToken)
	str("session-timeout", &mc.SessionTimeout, f.sessionTimeout)
	f.serveSectionFlags.apply(fl, &sc)
	sessions, err := mc.Sessions()
	if err != nil {
		return usageErr("%v", err)
	}
	if mc.HTTP == "" {
		for _, name := range []string{"max-sessions", "max-sessions-per-token", "session-timeout"} {
			if fl.Changed(name) {
				return usageErr("--%s needs --http: the stdio transport has one session, its client's", name)
			}
		}
	}

	defaults, set, err := serveSettings(c, sc)
	if err != nil {
		return err
	}
	var tokens *sandboxapi.Tokens
	if set.TokenFile != "" && mc.HTTP != "" {
		if tokens, err = sandboxapi.LoadTokens(set.TokenFile); err != nil {
			return usageErr("%v", err)
		}
	}
	if mc.HTTP == "" && mc.SandboxURL == "" && fl.Changed("token-file") {
		return usageErr("--token-file needs --http or --sandbox-url: the stdio transport has no authentication, the client that starts it owns it")
	}
	if fl.Changed("allow-dir") {
		mc.AllowDirs = f.allowDirs
	}
	allowDirs, err := resolveAllowDirs(mc.AllowDirs, mc.HTTP == "")
	if err != nil {
		return usageErr("--allow-dir: %v", err)
	}
	if len(c.Images) == 0 {
		return usageErr("empty image allowlist")
	}
	log := g.logger(c)
	ctx := cmd.Context()

	// Bind first: a refused address must fail before anything starts.
	inFlight := set.MaxBodyInFlightBytes
	if strings.TrimSpace(sc.MaxBodyInFlight) == "" {
		inFlight = config.DefaultMCPBodiesInFlight * set.MaxBodyBytes
	}
	hopts := mcpserver.HTTPOptions{Tokens: tokens, MaxBodyBytes: set.MaxBodyBytes, MaxBodyInFlightBytes: inFlight,
		MaxSessions: sessions.Max, MaxSessionsPerToken: sessions.PerToken, SessionTimeout: sessions.Timeout,
		Pace: sandboxapi.Pace{FirstByte: set.FirstByteTimeout, Idle: set.BodyIdleTimeout, MinRate: set.MinBodyRateBytes, Total: set.BodyReadTimeout}}
	// The sandbox metrics of `aster sandbox serve`, and the sessions, at GET /metrics.
	metrics := sandboxapi.NewMetrics()
	hopts.Metrics = metrics.Registry()
	var ln net.Listener
	if mc.HTTP != "" {
		ln, err = mcpserver.ListenHTTP(mc.HTTP, hopts)
		if err != nil {
			if errors.Is(err, mcpserver.ErrOpenListener) {
				return usageErr("%v", err)
			}
			return &exitError{code: ExitFailure, err: fmt.Errorf("listen %s: %w", mc.HTTP, err)}
		}
		defer ln.Close()
	}

	var exec mcpserver.Executor
	if mc.SandboxURL != "" {
		if exec, err = remoteExecutor(ctx, mc.SandboxURL, set); err != nil {
			return err
		}
		log.Info("sandboxes run on a remote orchestrator", "url", mc.SandboxURL)
	} else {
		// Over stdio the server is the editor's child: it stays up with the engine down
		// and answers each tool call with the reason, and works once the engine is back.
		local, closeExec, err := localExecutor(ctx, c, defaults, set, log, ln == nil, metrics)
		if err != nil {
			return err
		}
		defer closeExec()
		exec = local
	}

	// The egress policy (egress.allow, --egress-allow) comes with the relay; nil runs no install phase.
	// The install phase needs the relay of a local Manager (the API carries no
	// egress): with a remote orchestrator, send tests to its /v1/test instead.
	var egressPol *egress.Policy
	if mc.SandboxURL == "" {
		if egressPol, err = egressPolicy(c, nil, log); err != nil {
			return err
		}
	}
	tests, testSet, err := testRunner(c, egressPol, exec, log)
	if err != nil {
		return err
	}
	srv, err := mcpserver.New(mcpserver.Options{
		Tests:            tests,
		CallerCacheKeys:  testSet.CallerCacheKeys,
		Executor:         exec,
		Images:           c.Images,
		Defaults:         defaults,
		Ceilings:         set.Ceilings,
		AllowedDirs:      allowDirs,
		ProgressInterval: f.progressInterval,
		Version:          Version(),
		Logger:           log,
	})
	if err != nil {
		return usageErr("%v", err)
	}

	if ln == nil {
		log.Info("serving MCP on stdio", "images", c.Images, "max_concurrent", set.MaxConcurrent)
		if err := srv.ServeStdio(ctx, g.stdio.Stdin, g.stdio.Stdout); err != nil {
			return &exitError{code: ExitFailure, err: err}
		}
		return nil
	}
	log.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+mcpserver.Path,
		"auth", tokens != nil, "images", c.Images, "max_concurrent", set.MaxConcurrent,
		"max_sessions", sessions.Max, "max_sessions_per_token", sessions.PerToken, "session_timeout", sessions.Timeout)
	if err := srv.ServeHTTP(ctx, ln, hopts); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	return nil
}

// localExecutor runs sandboxes in this process: the configured runtime, a
// Manager with the serve section's admission, and the reaper in the
// background until ctx ends.
func localExecutor(ctx context.Context, c config.Config, defaults sandbox.Limits, set config.ServeSettings, log *slog.Logger,
	engineMayBeDown bool, metrics *sandboxapi.Metrics) (mcpserver.Executor, func(), error) {
	rt, closeRT, err := startRuntime(c, log, ExitFailure)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (mcpserver.Executor, func(), error) {
		closeRT()
		return nil, nil, err
	}
	if err := rt.Check(ctx); err != nil {
		if !engineMayBeDown {
			return fail(&exitError{code: ExitFailure, err: err})
		}
		log.Warn("the sandbox runtime is not available; every tool call will say so until it is", "err", err)
	}
	mgr, err := newManager(c, rt, sandbox.ManagerOptions{
		Defaults:      defaults,
		MaxConcurrent: set.MaxConcurrent,
		QueueSize:     set.QueueSize,
		QueueTimeout:  set.QueueTimeout,
		Logger:        log,
		Observer:      metrics,
	}, ExitFailure)
	if err != nil {
		return fail(err)
	}
	metrics.SetCapacity(mgr.Stats())
	if err := sandboxapi.RegisterPoolMetrics(metrics.Registry(), mgr); err != nil {
		return fail(&exitError{code: ExitFailure, err: err})
	}
	if err := startReaper(ctx, c, rt, mgr, log); err != nil {
		return fail(usageErr("%v", err))
	}
	return mgr, closeRT, nil
}

// remoteExecutor drives a remote `aster sandbox serve`, presenting the first
// token of the token file, after checking that it answers.
func remoteExecutor(ctx context.Context, url string, set config.ServeSettings) (mcpserver.Executor, error) {
	token := ""
	if set.TokenFile != "" {
		var err error
		if token, err = client.ReadTokenFile(set.TokenFile); err != nil {
			return nil, usageErr("%v", err)
		}
	}
	cl, err := client.New(client.Options{BaseURL: url, Token: token, UserAgent: "aster-mcp/" + Version()})
	if err != nil {
		return nil, usageErr("--sandbox-url: %v", err)
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.Health(hctx); err != nil {
		return nil, &exitError{code: ExitFailure, err: fmt.Errorf("--sandbox-url %s does not answer: %w", url, err)}
	}
	return remote.Sandbox{Client: cl, MaxStdinBytes: set.MaxBodyBytes}, nil
}

// resolveAllowDirs makes the allowed directories absolute; with none given,
// a stdio server (started by the user's own client) allows its working
// directory, and an HTTP server allows nothing.
func resolveAllowDirs(dirs []string, stdio bool) ([]string, error) {
	if len(dirs) == 1 && dirs[0] == "none" {
		return nil, nil
	}
	if len(dirs) == 0 {
		if !stdio {
			return nil, nil
		}
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		dirs = []string{wd}
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", d)
		}
		out = append(out, abs)
	}
	return out, nil
}

// startReaper removes leaked sandboxes now and every reaper period until ctx
// ends, sparing the ones this process holds.
func startReaper(ctx context.Context, c config.Config, rt sandbox.Runtime, mgr *sandbox.Manager, log *slog.Logger) error {
	grace, period, err := c.ReaperDurations()
	if err != nil {
		return err
	}
	o := reaper.ForRuntime(rt)
	o.Grace, o.Period, o.Logger, o.Skip = grace, period, log, mgr.Holds
	go reaper.New(o).Loop(ctx)
	return nil
}

func trimInvalid(err error) string {
	return strings.TrimPrefix(err.Error(), sandbox.ErrInvalidSpec.Error()+": ")
}

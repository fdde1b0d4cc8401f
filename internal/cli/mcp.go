package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/mcpserver"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/reaper"
)

// mcpConfig is the `mcp:` section of aster.yaml; flags override it.
type mcpConfig struct {
	HTTP          string              `yaml:"http"`
	TokenFile     string              `yaml:"token_file"`
	SandboxURL    string              `yaml:"sandbox_url"`
	MaxConcurrent int                 `yaml:"max_concurrent"`
	QueueSize     int                 `yaml:"queue_size"`
	QueueTimeout  string              `yaml:"queue_timeout"`
	MaxBody       string              `yaml:"max_body"`
	Ceilings      config.LimitsConfig `yaml:"ceilings"`
}

// defaultMCPConfig holds the MCP server's defaults: what one call may ask for
// at most (ceilings), and how many sandboxes run at once.
func defaultMCPConfig() mcpConfig {
	return mcpConfig{
		MaxConcurrent: 4,
		QueueSize:     16,
		QueueTimeout:  "60s",
		MaxBody:       "64m",
		Ceilings: config.LimitsConfig{
			Timeout:       "10m",
			Memory:        "4g",
			CPUs:          "2",
			Pids:          "1024",
			OutputLimit:   "16m",
			OutputCeiling: "1g",
			WorkdirSize:   "2g",
			TmpSize:       "1g",
		},
	}
}

type mcpFlags struct {
	http, tokenFile, sandboxURL    string
	maxConcurrent, queueSize       int
	queueTimeout, maxBody          string
	maxTimeout, maxMemory, maxCPUs string
	maxPids, maxOutput, maxWorkdir string
	progressInterval               time.Duration
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

By default the server speaks MCP on stdin/stdout (the client starts it as a
subprocess). With --http ADDR it serves the streamable HTTP transport at
http://ADDR/mcp instead; a non-loopback ADDR requires --token-file (bearer
tokens, one per line). Requests whose Host is not localhost on a loopback
listener are refused (DNS-rebinding protection).

Sandboxes run in-process on the configured runtime (Docker by default); the
leaked-sandbox reaper runs at start and every reaper period. With
--sandbox-url they run on a remote 'aster sandbox serve' instead.

Each call may lower or raise its limits up to the ceilings (--max-*); calls
over a ceiling, with bad input, or while every slot and queue place is taken
get an MCP tool error with a clear message. Progress notifications are sent
while a run goes when the client asks for them; cancelling the call destroys
the sandbox.`,
		Example: `  aster mcp
  aster mcp --http 127.0.0.1:8765
  aster mcp --http 0.0.0.0:8765 --token-file /etc/aster/tokens
  aster mcp --max-timeout 2m --max-memory 1g`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCP(cmd, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.http, "http", "", "serve streamable HTTP at ADDR (path /mcp) instead of stdio, e.g. 127.0.0.1:8765")
	fl.StringVar(&f.tokenFile, "token-file", "", "file of accepted bearer tokens, one per line (required for a non-loopback --http address)")
	fl.StringVar(&f.sandboxURL, "sandbox-url", "", "run sandboxes on a remote 'aster sandbox serve' at URL instead of in-process")
	fl.IntVar(&f.maxConcurrent, "max-concurrent", 0, "sandboxes running at once, in-process (default 4)")
	fl.IntVar(&f.queueSize, "queue", 0, "calls that may wait for a sandbox slot before 'busy' (default 16)")
	fl.StringVar(&f.queueTimeout, "queue-timeout", "", "how long a call may wait for a slot (default 60s)")
	fl.StringVar(&f.maxBody, "max-body", "", "largest HTTP request body, i.e. the files of one call (default 64m)")
	fl.StringVar(&f.maxTimeout, "max-timeout", "", "ceiling of limits.timeout_ms (default 10m)")
	fl.StringVar(&f.maxMemory, "max-memory", "", "ceiling of limits.memory_bytes (default 4g)")
	fl.StringVar(&f.maxCPUs, "max-cpus", "", "ceiling of limits.milli_cpus, in CPUs (default 2)")
	fl.StringVar(&f.maxPids, "max-pids", "", "ceiling of limits.pids (default 1024)")
	fl.StringVar(&f.maxOutput, "max-output-limit", "", "ceiling of limits.output_bytes (default 16m)")
	fl.StringVar(&f.maxWorkdir, "max-workdir-size", "", "ceiling of limits.workdir_bytes (default 2g)")
	fl.DurationVar(&f.progressInterval, "progress-interval", mcpserver.DefaultProgressInterval, "period of progress notifications")
	_ = fl.MarkHidden("progress-interval")
	return cmd
}

func runMCP(cmd *cobra.Command, g *globals, f *mcpFlags) error {
	c, err := g.load(cmd)
	if err != nil {
		return err
	}
	mc, err := loadMCPConfig(c)
	if err != nil {
		return usageErr("%v", err)
	}
	fl := cmd.Flags()
	str := func(name string, dst *string, v string) {
		if fl.Changed(name) {
			*dst = v
		}
	}
	str("http", &mc.HTTP, f.http)
	str("token-file", &mc.TokenFile, f.tokenFile)
	str("sandbox-url", &mc.SandboxURL, f.sandboxURL)
	str("queue-timeout", &mc.QueueTimeout, f.queueTimeout)
	str("max-body", &mc.MaxBody, f.maxBody)
	str("max-timeout", &mc.Ceilings.Timeout, f.maxTimeout)
	str("max-memory", &mc.Ceilings.Memory, f.maxMemory)
	str("max-cpus", &mc.Ceilings.CPUs, f.maxCPUs)
	str("max-pids", &mc.Ceilings.Pids, f.maxPids)
	str("max-output-limit", &mc.Ceilings.OutputLimit, f.maxOutput)
	str("max-workdir-size", &mc.Ceilings.WorkdirSize, f.maxWorkdir)
	if fl.Changed("max-concurrent") {
		mc.MaxConcurrent = f.maxConcurrent
	}
	if fl.Changed("queue") {
		mc.QueueSize = f.queueSize
	}

	ceilings, err := mc.Ceilings.Parse()
	if err != nil {
		return usageErr("mcp ceilings: %v", trimInvalid(err))
	}
	defaults, err := c.Limits.Parse()
	if err != nil {
		return usageErr("limits: %v", trimInvalid(err))
	}
	queueTimeout, err := config.ParseDuration(mc.QueueTimeout)
	if err != nil {
		return usageErr("--queue-timeout: %v", err)
	}
	maxBody, err := config.ParseBytes(mc.MaxBody)
	if err != nil {
		return usageErr("--max-body: %v", err)
	}
	if mc.MaxConcurrent < 1 || mc.QueueSize < 0 {
		return usageErr("--max-concurrent must be at least 1 and --queue at least 0")
	}
	var tokens []string
	if mc.TokenFile != "" {
		if tokens, err = mcpserver.LoadTokens(mc.TokenFile); err != nil {
			return usageErr("%v", err)
		}
	}
	if mc.HTTP == "" && len(tokens) > 0 {
		return usageErr("--token-file needs --http: the stdio transport is not authenticated, the client that starts it owns it")
	}
	if len(c.Images) == 0 {
		return usageErr("empty image allowlist")
	}
	log := g.logger(c)
	ctx := cmd.Context()

	var exec mcpserver.Executor
	if mc.SandboxURL != "" {
		return usageErr("--sandbox-url: the remote orchestrator client is not built yet; run without it to use in-process sandboxes")
	}
	rt, closeRT, err := openRuntime(c, log)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return &exitError{code: ExitFailure, err: err}
	}
	defer closeRT()
	if err := rt.Check(ctx); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	allowance, err := c.ReaperAllowance()
	if err != nil {
		return usageErr("%v", err)
	}
	mgr, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime:          rt,
		Images:           c.Images,
		Defaults:         defaults,
		ValidateLimits:   config.ValidateLimits,
		MaxConcurrent:    mc.MaxConcurrent,
		QueueSize:        mc.QueueSize,
		QueueTimeout:     queueTimeout,
		PrepareAllowance: allowance,
		Logger:           log,
	})
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	exec = mcpserver.Local{Manager: mgr}
	if err := startReaper(ctx, c, rt, mgr, log); err != nil {
		return usageErr("%v", err)
	}

	srv, err := mcpserver.New(mcpserver.Options{
		Executor:         exec,
		Images:           c.Images,
		Defaults:         defaults,
		Ceilings:         ceilings,
		ProgressInterval: f.progressInterval,
		Version:          Version(),
		Logger:           log,
	})
	if err != nil {
		return usageErr("%v", err)
	}

	if mc.HTTP == "" {
		log.Info("serving MCP on stdio", "images", c.Images, "max_concurrent", mc.MaxConcurrent)
		if err := srv.ServeStdio(ctx, g.stdio.Stdin, g.stdio.Stdout); err != nil {
			return &exitError{code: ExitFailure, err: err}
		}
		return nil
	}
	hopts := mcpserver.HTTPOptions{Tokens: tokens, MaxBodyBytes: maxBody}
	ln, err := mcpserver.ListenHTTP(mc.HTTP, hopts)
	if err != nil {
		if errors.Is(err, mcpserver.ErrOpenListener) {
			return usageErr("%v", err)
		}
		return &exitError{code: ExitFailure, err: fmt.Errorf("listen %s: %w", mc.HTTP, err)}
	}
	log.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+mcpserver.Path,
		"auth", len(tokens) > 0, "tokens", len(tokens), "images", c.Images, "max_concurrent", mc.MaxConcurrent)
	if err := srv.ServeHTTP(ctx, ln, hopts); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	return nil
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

func loadMCPConfig(c config.Config) (mcpConfig, error) {
	mc := defaultMCPConfig()
	node, ok := c.Extra["mcp"]
	if !ok {
		return mc, nil
	}
	var file mcpConfig
	if err := node.Decode(&file); err != nil {
		return mc, fmt.Errorf("config mcp section: %w", err)
	}
	set := func(d *string, s string) {
		if s != "" {
			*d = s
		}
	}
	set(&mc.HTTP, file.HTTP)
	set(&mc.TokenFile, file.TokenFile)
	set(&mc.SandboxURL, file.SandboxURL)
	set(&mc.QueueTimeout, file.QueueTimeout)
	set(&mc.MaxBody, file.MaxBody)
	if file.MaxConcurrent != 0 {
		mc.MaxConcurrent = file.MaxConcurrent
	}
	if file.QueueSize != 0 {
		mc.QueueSize = file.QueueSize
	}
	fc, cc := file.Ceilings, &mc.Ceilings
	set(&cc.Timeout, fc.Timeout)
	set(&cc.Memory, fc.Memory)
	set(&cc.CPUs, fc.CPUs)
	set(&cc.Pids, fc.Pids)
	set(&cc.OutputLimit, fc.OutputLimit)
	set(&cc.OutputCeiling, fc.OutputCeiling)
	set(&cc.WorkdirSize, fc.WorkdirSize)
	set(&cc.TmpSize, fc.TmpSize)
	return mc, nil
}

func trimInvalid(err error) string {
	return strings.TrimPrefix(err.Error(), sandbox.ErrInvalidSpec.Error()+": ")
}

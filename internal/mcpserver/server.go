package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
)

// Options configure a Server.
type Options struct {
	// Executor runs sandboxes (required): a *sandbox.Manager in-process, or
	// remote.Sandbox for a remote orchestrator.
	Executor Executor
	// Images is the image allowlist the tools advertise; the first is the
	// default. The Executor enforces its own allowlist as well.
	Images []string
	// Defaults fill the limits a call leaves zero.
	Defaults sandbox.Limits
	// Ceilings are the most a call may ask for, field by field; a zero field
	// leaves only the absolute bounds of config.ValidateLimits.
	Ceilings sandbox.Limits
	// AllowedDirs are the directories on this machine whose contents
	// run_tests and validate may be asked to copy into a sandbox (by path);
	// none means callers must send their files.
	AllowedDirs []string
	// Analyzers are the analyzers validate runs (nil: gate.Builtins()).
	Analyzers []gate.Analyzer
	// ProgressInterval is the period of progress notifications.
	ProgressInterval time.Duration
	// Version is reported as the server's implementation version.
	Version string
	// Tests runs run_tests in its phases (install through the egress relay,
	// the dependency cache); nil runs the test phase alone and reports a
	// needed install as not run.
	Tests *testphase.Runner
	// CallerCacheKeys lets a call's cache_key name its repository for the
	// dependency cache (tests.caller_cache_keys).
	CallerCacheKeys bool
	// Sessions opens the sandboxes the session tools hold across calls; nil
	// takes the Executor when it can (an in-process *sandbox.Manager), and
	// without one the session tools are not offered.
	Sessions SessionOpener
	// MaxSessionsPerConnection bounds the sessions one MCP connection holds
	// at once (default 4).
	MaxSessionsPerConnection int
	Logger                   *slog.Logger
}

// Server is Aster's MCP server: the sandbox tools bound to an mcp.Server,
// plus the bookkeeping that lets a shutdown cancel every running call and wait
// until its sandbox is destroyed.
type Server struct {
	opts Options
	mcp  *mcp.Server
	log  *slog.Logger

	base     context.Context
	cancel   context.CancelFunc
	inflight sync.WaitGroup
	held     *held // nil: no session tools
}

// New returns a Server with its tools registered.
func New(opts Options) (*Server, error) {
	if opts.Executor == nil {
		return nil, errors.New("mcpserver: no executor")
	}
	if len(opts.Images) == 0 {
		return nil, errors.New("mcpserver: empty image allowlist")
	}
	if opts.Defaults == (sandbox.Limits{}) {
		opts.Defaults = config.DefaultLimits()
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = config.DefaultMCPProgressInterval
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Tests == nil {
		opts.Tests = &testphase.Runner{Logger: opts.Logger}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, _, err := resolveLimits(nil, opts.Defaults, opts.Ceilings); err != nil {
		return nil, fmt.Errorf("mcpserver: default limits: %w", err)
	}
	s := &Server{opts: opts, log: log}
	if opts.Sessions == nil {
		opts.Sessions, _ = opts.Executor.(SessionOpener)
	}
	if opts.Sessions != nil {
		s.held = newHeld(opts.Sessions, opts.MaxSessionsPerConnection)
	}
	s.base, s.cancel = context.WithCancel(context.Background())
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "aster", Title: "Aster sandbox", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: s.instructions(),
		Logger:       sdkLogger(log),
	})
	for _, add := range []func() error{s.addExecute, s.addRunTests, s.addValidate, s.addSessionTools} {
		if err := add(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

const instructions = `Aster runs code in throwaway, hardened Linux sandboxes: one fresh container per
call, destroyed afterwards, with no network (only loopback), no capabilities, a
non-root user, a read-only root filesystem, and caps on memory (no swap), CPU,
processes, output and wall-clock time. Files you pass are placed under /work,
the writable working directory; /tmp is writable too. Nothing survives between
execute calls: send everything a run needs with the call. Results carry a status (ok,
exit_nonzero, timeout, oom, output_limit, killed, error), the exit code, and
stdout and stderr (capped; truncation is stated).`

const sessionInstructions = `

To keep files and state across calls, use the session tools (session_exec,
session_write_file, session_read_file, ...): without a session_id they share
this connection's default sandbox, opened on first use and destroyed when the
connection ends.`

func (s *Server) instructions() string {
	if s.held == nil {
		return instructions
	}
	return instructions + sessionInstructions
}

// MCP returns the underlying SDK server, to serve on any transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Close cancels every running tool call and waits, until ctx ends, for their
// sandboxes to be destroyed.
func (s *Server) Close(ctx context.Context) error {
	s.cancel()
	if s.held != nil {
		s.held.shutdown()
	}
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcpserver: tool calls still running at shutdown: %w", context.Cause(ctx))
	}
}

// track ties a tool call's context to the server's lifetime and counts it,
// so Close can cancel it and wait for its clean-up.
func (s *Server) track(ctx context.Context) (context.Context, func()) {
	s.inflight.Add(1)
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.base, func() { cancel(errors.New("aster mcp is shutting down")) })
	return ctx, func() {
		stop()
		cancel(nil)
		s.inflight.Done()
	}
}

// toolError is the error a tool returns for a call it cannot run: the SDK
// sends it as a tool result with isError set, so the model can read it and
// correct the call. The class name leads the message.
func toolError(err error) error {
	code := api.ErrorCode(err)
	msg := err.Error()
	// "invalid spec: x" under the code invalid_spec says it twice.
	for _, class := range []error{sandbox.ErrInvalidSpec, sandbox.ErrUnknownImage, sandbox.ErrTooLarge, sandbox.ErrBusy, sandbox.ErrUnavailable} {
		msg = strings.TrimPrefix(msg, class.Error()+": ")
	}
	switch code {
	case "busy":
		msg += " (every sandbox slot is taken and the queue is full; retry in a few seconds)"
	case "unavailable":
		msg += " (the sandbox runtime is unreachable; this is a server problem, not your input)"
	}
	return fmt.Errorf("%s: %s", code, msg)
}

// limitsSummary renders limits for tool descriptions.
func limitsSummary(l sandbox.Limits) string {
	var parts []string
	for _, f := range sandbox.LimitFields() {
		if v := *f.Of(&l); v > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", f.Name, f.Format(v)))
		}
	}
	return strings.Join(parts, ", ")
}

// imageList renders the allowlist for descriptions.
func imageList(images []string) string {
	q := slices.Clone(images)
	for i := range q {
		q[i] = fmt.Sprintf("%q", q[i])
	}
	return strings.Join(q, ", ")
}

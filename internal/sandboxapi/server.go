// Package sandboxapi is the orchestrator's HTTP API (`aster sandbox serve`):
// each request to /v1/execute or /v1/test becomes a throwaway sandbox through
// a sandbox.Manager, with bearer-token auth, body caps, admission control
// answered as 429 with Retry-After, optional NDJSON streaming, Prometheus
// metrics and timeouts against slow clients. Its wire types are package api;
// its Go client is package client.
package sandboxapi

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/runstore"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
)

// Options configure a Server. Zero durations and sizes take the defaults
// noted; Manager is required.
type Options struct {
	Manager *sandbox.Manager
	// Tokens, when set, are required on /v1/* and /metrics. Without them the
	// server only listens on loopback addresses (see CheckExposure).
	Tokens *Tokens
	// Metrics must be the Manager's Observer too; nil makes unshared ones.
	Metrics *Metrics
	// MaxBodyBytes caps request bodies (default 64 MiB).
	MaxBodyBytes int64
	// Ceilings are the largest limits a request may ask for; zero fields are
	// not checked (the Manager's own validation still applies).
	Ceilings sandbox.Limits
	// ReadHeaderTimeout, BodyReadTimeout, WriteTimeout (per write) and
	// IdleTimeout guard against slow clients (defaults 5s, 60s, 30s, 90s).
	ReadHeaderTimeout time.Duration
	BodyReadTimeout   time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// ShutdownGrace is how long running jobs may finish after Serve's context
	// ends before they are cancelled and their sandboxes destroyed.
	ShutdownGrace time.Duration
	// TempDir is where snapshots are spooled ("" is os.TempDir()).
	TempDir string
	// MaxSpoolBytes bounds the disk the requests take at once: every
	// snapshot being spooled or held, and the dependency archives of
	// /v1/test (default config.DefaultSpoolPerCeiling × the workdir
	// ceiling; negative: no bound).
	MaxSpoolBytes int64
	// MaxBodyInFlightBytes bounds the JSON body bytes held in memory at
	// once (default config.DefaultBodiesInFlight × MaxBodyBytes; negative:
	// no bound).
	MaxBodyInFlightBytes int64
	// MaxUploadsPerClient bounds the snapshot uploads in progress from one
	// remote address (default: half the upload slots; negative: no bound).
	MaxUploadsPerClient int
	// FirstByteTimeout, BodyIdleTimeout and MinBodyRate pace every body
	// (see Pace); zero takes the config defaults, negative turns one off.
	FirstByteTimeout time.Duration
	BodyIdleTimeout  time.Duration
	MinBodyRate      int64
	// Validator answers /v1/validate (a *gate.Validator) behind the same
	// auth, admission, body limits and metrics as the runs; nil answers 404.
	Validator Validator
	// Egress is the operator's egress relay policy (aster.yaml egress.allow,
	// --egress-allow) for the install phase of /v1/test when Tests is nil;
	// nil or an empty list: no sandbox of this server reaches anything.
	// Requests cannot change it.
	Egress *egress.Policy
	// EgressProfiles are the operator's named egress policies for sessions
	// (aster.yaml egress.profiles). A session's owner picks one of those
	// its token may use (Tokens' egress=; every one on a loopback server
	// without tokens) at creation or while it runs; a request names a
	// profile, never a host, an address or a secret. Without profiles a
	// session reaches nothing.
	EgressProfiles map[string]*egress.Policy
	// EngineCheckPeriod is how often the engine is probed for the
	// aster_engine_up metric (default 5s).
	EngineCheckPeriod time.Duration
	// Tests runs /v1/test in its phases (install through the egress relay,
	// the dependency cache); nil runs the test phase alone and reports a
	// needed install as not run.
	Tests *testphase.Runner
	// CallerCacheKeys lets a request's cache_key name its repository for
	// the dependency cache (tests.caller_cache_keys).
	CallerCacheKeys bool
	// Runs keeps the asynchronous runs of /v1/runs; nil answers those
	// routes 404.
	Runs *runstore.Store
	// Callbacks is where and how a run's result may be POSTed when it ends.
	Callbacks Callbacks
	// ImageProbeTimeout bounds the run that reads an image's toolchain
	// versions for /v1/images (default 20s).
	ImageProbeTimeout time.Duration
	// MaxSessionsPerToken bounds the live sessions of one token (default
	// DefaultMaxSessionsPerToken).
	MaxSessionsPerToken int
	// MaxSessions bounds the live sessions of the server, all tokens
	// together (default: half of the Manager's slots, at least 1, so that
	// one-shot runs keep slots of their own).
	MaxSessions int
	// SnapshotDir holds the session snapshots (emptied at start; default a
	// new temporary directory) and MaxSnapshotBytes bounds them all together
	// (default DefaultMaxSnapshotBytes; the least recently used go first).
	SnapshotDir      string
	MaxSnapshotBytes int64
	Logger           *slog.Logger

	// spoolHook, in tests, sees each spool file after every write.
	spoolHook func(*os.File)
}

// Server is the HTTP API. It is an http.Handler; Serve runs it with
// timeouts and graceful shutdown.
type Server struct {
	opts     Options
	log      *slog.Logger
	metrics  *Metrics
	mgr      *sandbox.Manager
	uploads  chan struct{} // snapshots being spooled or held for a run
	clients  *clientSlots  // the same, per remote address
	spool    *Budget       // disk of the snapshots spooled or held, and of /v1/test's files
	bodies   *Budget       // memory of the JSON bodies being served
	pace     Pace
	tests    *testphase.Runner
	inflight sync.WaitGroup

	imageInfo imageCache

	// The detached (asynchronous) runs and the context they run under.
	background sync.WaitGroup
	baseMu     sync.Mutex
	base       context.Context

	sessions  sessionTable   // sessions.go
	profiles  *profileSet    // session_egress.go
	snapshots *snapshotStore // snapshots.go
	terminals terminalTable  // pty.go
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Manager == nil {
		return nil, errors.New("sandboxapi: no manager")
	}
	if len(opts.Callbacks.Allow) > 0 && len(opts.Callbacks.Secret) == 0 {
		return nil, errors.New("sandboxapi: callbacks are allowed but have no signing secret (--callback-secret-file)")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.ReadHeaderTimeout, config.DefaultReadHeaderTimeout)
	def(&opts.BodyReadTimeout, config.DefaultBodyReadTimeout)
	def(&opts.WriteTimeout, config.DefaultWriteTimeout)
	def(&opts.IdleTimeout, config.DefaultIdleTimeout)
	def(&opts.EngineCheckPeriod, 5*time.Second)
	def(&opts.FirstByteTimeout, config.DefaultFirstByteTimeout)
	def(&opts.BodyIdleTimeout, config.DefaultBodyIdleTimeout)
	if opts.MinBodyRate == 0 {
		opts.MinBodyRate = config.DefaultMinBodyRate
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = config.DefaultMaxBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.Tests == nil {
		opts.Tests = &testphase.Runner{Policy: opts.Egress, TempDir: opts.TempDir, Logger: opts.Logger}
	}
	st := opts.Manager.Stats()
	opts.Metrics.setCapacity(st)
	slots := st.MaxConcurrent + st.QueueSize
	if opts.MaxUploadsPerClient == 0 {
		opts.MaxUploadsPerClient = (slots + 1) / 2
	}
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		metrics:  opts.Metrics,
		mgr:      opts.Manager,
		sessions: sessionTable{byID: map[string]*ownedSession{}},
		profiles: newProfileSet(opts.EgressProfiles),
		tests:    opts.Tests,
		uploads:  make(chan struct{}, slots),
		clients:  newClientSlots(opts.MaxUploadsPerClient),
		pace: Pace{FirstByte: opts.FirstByteTimeout, Idle: opts.BodyIdleTimeout, MinRate: opts.MinBodyRate,
			Total: opts.BodyReadTimeout},
	}
	if opts.MaxSpoolBytes == 0 {
		opts.MaxSpoolBytes = config.DefaultSpoolPerCeiling * s.workspaceCeiling()
	}
	snaps, err := newSnapshotStore(opts.SnapshotDir, opts.MaxSnapshotBytes)
	if err != nil {
		return nil, err
	}
	s.snapshots = snaps
	if opts.MaxBodyInFlightBytes == 0 {
		opts.MaxBodyInFlightBytes = config.DefaultBodiesInFlight * opts.MaxBodyBytes
	}
	s.opts = opts
	s.spool = NewBudget(opts.MaxSpoolBytes, "spool space for snapshots and test files (--max-spool)")
	s.spool.onRefuse = func() { s.metrics.Rejected("spool_full") }
	s.bodies = NewBudget(opts.MaxBodyInFlightBytes, "memory for request bodies (--max-body-in-flight)")
	s.bodies.onRefuse = func() { s.metrics.Rejected("bodies_full") }
	return s, nil
}

// workspaceCeiling is the largest snapshot any request may send.
func (s *Server) workspaceCeiling() int64 {
	if ws := s.opts.Ceilings.WorkdirBytes; ws > 0 {
		return ws
	}
	return s.mgr.Limits().WorkdirBytes
}

// BodyOptions are the body limits the server applies, for handlers such as
// the /v1/validate one that read snapshots with ReadBody.
// Snapshots of /v1/execute and /v1/test are bounded by each request's own
// workspace size and share the server's spool space.
func (s *Server) BodyOptions() BodyOptions {
	return BodyOptions{MaxBodyBytes: s.opts.MaxBodyBytes, WorkspaceMaxBytes: s.workspaceCeiling(),
		ReadTimeout: s.opts.BodyReadTimeout, TempDir: s.opts.TempDir,
		SnapshotLimit: s.snapshotLimit, Spool: s.spool, spoolHook: s.opts.spoolHook}
}

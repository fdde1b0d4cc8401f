// Package sandboxapi is the orchestrator's HTTP API (`aster sandbox serve`):
// each request to /v1/execute or /v1/test becomes a throwaway sandbox through
// a sandbox.Manager, with bearer-token auth, body caps, admission control
// answered as 429 with Retry-After, optional NDJSON streaming, Prometheus
// metrics and timeouts against slow clients. Its wire types are package api;
// its Go client is package client.
package sandboxapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/api/openapi"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/health"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/textclip"
)

// Route is one path the server answers: the methods it takes and whether it
// needs the bearer token (when the server has tokens).
type Route struct {
	Path    string
	Methods []string
	Auth    bool
}

// Routes lists every path the server answers. The OpenAPI description
// describes exactly these paths and methods (a test holds them together);
// any other path is 404, any other method 405 with Allow.
func Routes() []Route {
	post := []string{http.MethodPost}
	get := []string{http.MethodGet, http.MethodHead}
	return []Route{
		{api.RouteExecute, post, true},
		{api.RouteExecuteStream, post, true},
		{api.RouteTest, post, true},
		{api.RouteTestStream, post, true},
		{api.RouteValidate, post, true},
		{api.RouteHealth, get, false},
		{api.RouteReady, get, false},
		{api.RouteMetrics, []string{http.MethodGet}, true},
		{api.RouteOpenAPI, []string{http.MethodGet}, false},
	}
}

func lookupRoute(path string) (Route, bool) {
	for _, rt := range Routes() {
		if rt.Path == path {
			return rt, true
		}
	}
	return Route{}, false
}

func routePaths() string {
	var paths []string
	for _, rt := range Routes() {
		paths = append(paths, rt.Path)
	}
	return strings.Join(paths, ", ")
}

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
	Logger          *slog.Logger

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
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Manager == nil {
		return nil, errors.New("sandboxapi: no manager")
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
		opts:    opts,
		log:     opts.Logger,
		metrics: opts.Metrics,
		mgr:     opts.Manager,
		tests:   opts.Tests,
		uploads: make(chan struct{}, slots),
		clients: newClientSlots(opts.MaxUploadsPerClient),
		pace: Pace{FirstByte: opts.FirstByteTimeout, Idle: opts.BodyIdleTimeout, MinRate: opts.MinBodyRate,
			Total: opts.BodyReadTimeout},
	}
	if opts.MaxSpoolBytes == 0 {
		opts.MaxSpoolBytes = config.DefaultSpoolPerCeiling * s.workspaceCeiling()
	}
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

// ServeHTTP routes a request. Every answer, errors included, is JSON.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	start := time.Now()
	route := routeOf(r.URL.Path)
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("handler panic", "route", route, "panic", p)
			if !sw.wroteHeader {
				s.writeError(sw, r, fmt.Errorf("panic: %v", p))
			}
		}
		d := time.Since(start)
		s.metrics.observeRequest(route, sw.status(), d)
		level := slog.LevelInfo
		if route == api.RouteHealth || route == api.RouteReady || route == api.RouteMetrics || route == api.RouteOpenAPI {
			level = slog.LevelDebug
		}
		attrs := []any{"method", r.Method, "route", route, "status", sw.status(),
			"ms", d.Milliseconds(), "run", sw.Header().Get(api.HeaderRunID), "remote", r.RemoteAddr}
		if code := sw.errorCode(); code != "" {
			// A refused request says why in the log too, as the client was told.
			attrs = append(attrs, "code", code)
		}
		s.log.Log(r.Context(), level, "request", attrs...)
	}()

	rt, ok := lookupRoute(route)
	if !ok {
		s.writeError(sw, r, fmt.Errorf("%w: no route %s (have %s)", api.ErrNotFound, clipPath(r.URL.Path), routePaths()))
		return
	}
	if rt.Auth {
		if err := s.opts.Tokens.authorize(r); err != nil {
			s.writeError(sw, r, err)
			return
		}
	}
	if !slices.Contains(rt.Methods, r.Method) {
		sw.Header().Set("Allow", strings.Join(rt.Methods, ", "))
		s.writeError(sw, r, fmt.Errorf("%w: %s takes %s", api.ErrMethodNotAllowed, route, strings.Join(rt.Methods, " or ")))
		return
	}
	switch route {
	case api.RouteHealth:
		s.deadline(sw)
		health.Write(sw) // the one shape of every server's /healthz
	case api.RouteReady:
		s.ready(sw, r)
	case api.RouteMetrics:
		s.metrics.Handler().ServeHTTP(sw, r)
	case api.RouteOpenAPI:
		s.writeRaw(sw, api.ContentTypeJSON, openapi.JSON())
	case api.RouteExecute, api.RouteExecuteStream:
		s.execute(sw, r)
	case api.RouteTest, api.RouteTestStream:
		s.test(sw, r)
	case api.RouteValidate:
		if s.opts.Validator == nil {
			s.writeError(sw, r, fmt.Errorf("%w: this server has no validator configured", api.ErrNotFound))
			return
		}
		s.validate(sw, r)
	}
}

// readRequest admits a request's body (admitBody) and reads it into req
// (ReadBody). done, never nil, closes the snapshot and releases the
// admission: the caller defers it, and answers an error before it runs.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, req any) (snap *Snapshot, done func(), err error) {
	adm, err := s.admitBody(w, r)
	if err != nil {
		return nil, func() {}, err
	}
	snap, err = ReadBody(w, r, req, s.BodyOptions())
	adm.bodyRead()
	return snap, func() { snap.Close(); adm.release() }, err
}

// readJob is readRequest for a request that carries a job (job points into
// req), followed by the job's spec (jobSpec). done is readRequest's.
func (s *Server) readJob(w http.ResponseWriter, r *http.Request, req any, job *api.JobRequest) (snap *Snapshot, spec sandbox.Spec, done func(), err error) {
	snap, done, err = s.readRequest(w, r, req)
	if err != nil {
		return snap, spec, done, err
	}
	spec, err = s.jobSpec(*job, snap)
	return snap, spec, done, err
}

func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	var req api.ExecuteRequest
	_, spec, done, err := s.readJob(w, r, &req, &req.JobRequest)
	defer done()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	spec.Argv = req.Argv
	s.run(w, r, spec, nil, func(res sandbox.Result) any { return res.Wire() })
}

func (s *Server) test(w http.ResponseWriter, r *http.Request) {
	var req api.TestRequest
	var body api.TestResponse
	snap, spec, done, err := s.readJob(w, r, &req, &req.JobRequest)
	defer done()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	plan, install, err := testPlan(req, snap)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job, err := s.testJob(req, spec, snap, plan, install)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// One share of the spool space for everything the request puts on
	// disk, from its snapshot to its dependency archive, held until it is
	// answered (and so also while its test phase waits for a slot).
	if snap != nil {
		job.Disk = snap.space
	} else {
		disk, _ := s.spool.Reserve(0)
		defer disk.Release()
		job.Disk = disk
	}
	if req.InstallTimeout != "" {
		d, err := config.ParseDuration(string(req.InstallTimeout))
		if err != nil || d <= 0 {
			s.writeError(w, r, sandbox.Invalidf("install_timeout %q: want a duration such as 5m", req.InstallTimeout))
			return
		}
		if c := s.opts.Ceilings.Timeout(); c > 0 && d > c {
			s.writeError(w, r, sandbox.Invalidf("install_timeout %s is over the timeout ceiling %s", d, c))
			return
		}
		job.InstallTimeout = d
	}
	// Refuse a spec the Manager would refuse before anything runs: the
	// install phase must not start for a test phase that cannot.
	probe := spec
	probe.Argv, probe.Env = plan.Argv, plan.MergeEnv(req.Env)
	if _, err := s.mgr.Normalize(probe); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, r, job.ID, func(ctx context.Context, st *streamer) (sandbox.Result, error) {
		out, err := s.tests.Run(ctx, job, func(ctx context.Context, phase string, spec sandbox.Spec) (sandbox.Result, error) {
			prev := spec.OnOutput
			spec.OnOutput = func(stream sandbox.Stream, data []byte) {
				if prev != nil {
					prev(stream, data)
				}
				if st != nil {
					if phase == testphase.PhaseInstall {
						stream = sandbox.Stderr // stdout is the test report's
					}
					st.output(stream, data)
				}
			}
			var opts sandbox.RunOptions
			if st != nil {
				opts.Admitted = st.start
			}
			return s.mgr.RunWithOptions(ctx, spec, opts)
		})
		if err != nil {
			return out.Result, err
		}
		body = out.Response()
		return out.Result, out.Err
	}, func(sandbox.Result) any { return body })
}

// Validator is what /v1/validate needs from the gate.
type Validator interface {
	Validate(ctx context.Context, in gate.ValidateInput) (gate.ValidateResponse, error)
}

var _ Validator = (*gate.Validator)(nil)

// maxSnapshotList bounds the entries of a snapshot listed for /v1/validate.
const maxSnapshotList = 200_000

// validate serves /v1/validate through the same admission and body reading
// as the runs: its snapshot is bounded by the workspace ceiling and holds
// that much of the spool space while the analyzers run.
func (s *Server) validate(w http.ResponseWriter, r *http.Request) {
	// One id for the whole validation (its analyzers run as sandboxes of their own), in the
	// answer's header and the request's log line, as for /v1/execute and /v1/test.
	w.Header().Set(api.HeaderRunID, sandbox.NewRunID())
	var req api.ValidateRequest
	snap, done, err := s.readRequest(w, r, &req)
	defer done()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if snap == nil {
		s.writeError(w, r, sandbox.Invalidf("a repository snapshot is required: send application/x-tar (spec in the %s header) or multipart/form-data with a workspace file", api.HeaderSpec))
		return
	}
	names, err := snap.Names(maxSnapshotList)
	if err != nil {
		s.writeError(w, r, sandbox.Invalidf("snapshot: %v", err))
		return
	}
	var files []string
	for _, n := range names {
		if !strings.HasSuffix(n, "/") {
			files = append(files, n)
		}
	}
	gs := gate.NewSnapshotFrom(func() (io.ReadCloser, error) { return io.NopCloser(snap.Reader()), nil }, files, snap.Stats)
	out, err := s.opts.Validator.Validate(r.Context(), gate.ValidateInput{Snapshot: gs, Analyzers: req.Analyzers, ChangedFiles: req.ChangedFiles})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

// run normalises spec, runs it through the Manager and answers: a JSON body,
// or an NDJSON stream when the client asked for one. report, when set, is fed
// the job's stdout as it arrives.
func (s *Server) run(w http.ResponseWriter, r *http.Request, spec sandbox.Spec, report *testrun.Collector, body func(sandbox.Result) any) {
	spec, err := s.mgr.Normalize(spec)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, r, spec.ID, func(ctx context.Context, st *streamer) (sandbox.Result, error) {
		spec.OnOutput = func(stream sandbox.Stream, data []byte) {
			if report != nil && stream == sandbox.Stdout {
				_, _ = report.Write(data)
			}
			if st != nil {
				st.output(stream, data)
			}
		}
		var opts sandbox.RunOptions
		if st != nil {
			opts.Admitted = st.start
		}
		return s.mgr.RunWithOptions(ctx, spec, opts)
	}, body)
}

// answer runs exec (one run, or the phases of a test) and answers: a JSON
// body, or an NDJSON stream when the client asked for one; id is the run's
// id, sent in the header.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, id string, exec func(ctx context.Context, st *streamer) (sandbox.Result, error), body func(sandbox.Result) any) {
	w.Header().Set(api.HeaderRunID, id)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	var st *streamer
	if wantsStream(r) {
		st = newStreamer(w, s.opts.WriteTimeout, cancel)
	}
	res, err := exec(ctx, st)
	err = s.reclassify(err)
	status, code := StatusFor(err)
	classified := err != nil && status != http.StatusInternalServerError
	if err != nil && !classified {
		s.log.Warn("run failed", "run", id, "err", err)
	}
	if st != nil && st.isStarted() {
		var events []any
		if classified {
			events = append(events, api.ErrorEvent{Type: api.EventError, Error: api.ErrorDetail{Code: code, Message: err.Error()}})
		}
		st.finish(append(events, resultEvent(body(res)))...)
		return
	}
	if classified {
		s.writeError(w, r, err)
		return
	}
	// A run that started and failed inside the sandbox is still a result:
	// status "error" with the output it produced.
	s.writeJSON(w, http.StatusOK, body(res))
}

func isSnapshotUpload(r *http.Request) bool {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	return strings.HasPrefix(ct, api.ContentTypeTar) || strings.HasPrefix(ct, "multipart/form-data")
}

// reclassify names a run failure the engine caused: when a run broke and the
// engine is unreachable now, the client should retry (503), not blame the job.
func (s *Server) reclassify(err error) error {
	if err == nil {
		return nil
	}
	if status, _ := StatusFor(err); status != http.StatusInternalServerError || errors.Is(err, context.Canceled) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if cerr := s.mgr.Runtime().Check(ctx); cerr != nil {
		s.metrics.setEngineUp(false)
		return fmt.Errorf("%w (the run failed: %v)", cerr, err)
	}
	return err
}

// ready answers /readyz: the engine is reachable and the default image present.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	rt := s.mgr.Runtime()
	if err := rt.Check(ctx); err != nil {
		s.metrics.setEngineUp(false)
		s.writeError(w, r, err)
		return
	}
	s.metrics.setEngineUp(true)
	img, err := rt.ImageInfo(ctx, s.mgr.DefaultImage())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("%w: default image: %w", sandbox.ErrUnavailable, err))
		return
	}
	st := s.mgr.Stats()
	s.writeJSON(w, http.StatusOK, map[string]any{
		"status": "ready", "runtime": rt.Name(), "image": img.Name, "image_digest": img.Digest,
		"running": st.Running, "queued": st.Queued, "max_concurrent": st.MaxConcurrent, "queue_size": st.QueueSize,
	})
}

// writeError answers with err's status, adding Retry-After to 429 and 503.
// A request that carried a body gets "Connection: close": its body may be
// partly unread, and net/http would otherwise try to drain it from what may
// be a deliberately slow client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	retry := 0
	switch status, _ := StatusFor(err); status {
	case http.StatusTooManyRequests:
		retry = s.metrics.retryAfter(s.mgr.Stats())
	case http.StatusServiceUnavailable:
		retry = 5
	case http.StatusInternalServerError:
		s.log.Error("internal error", "err", err)
	}
	s.deadline(w)
	WriteError(w, err, retry)
	flush(w)
}

// flush puts a finished answer on the wire before the handler returns, so a
// shutdown that waits for handlers does not close a connection with the
// answer still buffered.
func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", api.ContentTypeJSON)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	s.deadline(w)
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.log.Debug("write response", "err", err)
	}
	flush(w)
}

// writeRaw answers 200 with a body already encoded.
func (s *Server) writeRaw(w http.ResponseWriter, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	s.deadline(w)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	flush(w)
}

func (s *Server) deadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
}

// Serve answers on ln until ctx ends, then shuts down gracefully: it stops
// accepting, fails queued runs with 503, lets running ones finish for up to
// ShutdownGrace, then cancels the rest (their sandboxes are destroyed) and
// returns. Without tokens it refuses a listener that is not on loopback.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := CheckExposure(ln.Addr(), s.opts.Tokens != nil); err != nil {
		ln.Close()
		return err
	}
	base, cancelBase := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelBase(nil)
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	go s.watchEngine(base)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: no new requests; running jobs may finish", "grace", s.opts.ShutdownGrace)
	s.mgr.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownGrace)
	err := hs.Shutdown(sctx)
	cancel()
	if err != nil {
		s.log.Warn("grace period over: cancelling the runs still going and destroying their sandboxes")
		cancelBase(errors.New("the server is shutting down"))
		done := make(chan struct{})
		go func() { s.inflight.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			s.log.Error("requests still running a minute after cancellation")
		}
		// The cancelled runs have answered; let those answers drain.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
		cancel()
	}
	<-errc
	s.log.Info("stopped")
	return nil
}

// watchEngine keeps aster_engine_up current and logs when the engine goes
// away and comes back.
func (s *Server) watchEngine(ctx context.Context) {
	up := true
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.mgr.Runtime().Check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.metrics.setEngineUp(err == nil)
		switch {
		case err != nil && up:
			s.log.Warn("container engine unreachable; runs answer 503 until it is back", "err", err)
		case err == nil && !up:
			s.log.Info("container engine is back")
		}
		up = err == nil
		t := time.NewTimer(s.opts.EngineCheckPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// routeOf is the route label of a path for metrics and logs.
func routeOf(p string) string {
	if _, ok := lookupRoute(p); ok {
		return p
	}
	return "other"
}

func clipPath(p string) string {
	return fmt.Sprintf("%q", textclip.Head(p, 64, "..."))
}

// statusWriter records the status for metrics and logs, and the start of an
// error answer for its code. Unwrap lets http.ResponseController reach the
// connection for deadlines and flushes.
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
	errHead     []byte // the first bytes of a 4xx or 5xx body
}

// maxErrHead bounds what statusWriter keeps of an error body.
const maxErrHead = 512

// errorCode is the code of the error answer written ("" for none).
func (w *statusWriter) errorCode() string {
	if w.status() < 400 || len(w.errHead) == 0 {
		return ""
	}
	var body api.ErrorBody
	if json.Unmarshal(w.errHead, &body) != nil {
		return ""
	}
	return body.Error.Code
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = http.StatusOK, true
	}
	if w.code >= 400 && len(w.errHead) < maxErrHead {
		w.errHead = append(w.errHead, p[:min(len(p), maxErrHead-len(w.errHead))]...)
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if !w.wroteHeader {
		return http.StatusOK
	}
	return w.code
}

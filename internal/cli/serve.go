package cli

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/runstore"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/units"
)

type serveFlags struct {
	serveSectionFlags
	addr, images                                                    string
	shutdownGrace, readHeaderTimeout, bodyReadTimeout, writeTimeout string
	idleTimeout, reaperPeriod, reaperGrace                          string
	maxSpool, maxUploadsPerClient                                   string
	firstByteTimeout, bodyIdleTimeout, minBodyRate                  string
	warm                                                            int
	egressAllow                                                     []string
	runsDB, runsRetention, runsMaxBytes, callbackSecretFile         string
	callbackAllow                                                   []string
	maxSessions, maxSessionsPerToken, snapshotDir                   string
}

func newServeCmd(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the sandbox orchestrator HTTP API (/v1/execute, /v1/test, /v1/validate)",
		Long: `Serve the orchestrator API: every POST /v1/execute, /v1/test or /v1/validate
(the static-analysis gate over a snapshot) runs in sandboxes made for that
request and destroyed after it (see 'aster exec --help' for what a sandbox
is). GET /healthz, /readyz and /metrics (Prometheus) report on the service.

Admission: at most --max-concurrent sandboxes are alive at once (default:
80% of host memory divided by the default memory limit); up to --queue more
runs wait in a FIFO queue for at most --queue-timeout; past that the answer
is 429 with Retry-After. A client that disconnects cancels its run.

Auth: with --token-file, every /v1/* and /metrics request needs
"Authorization: Bearer <token>" with a token from the file (one a line).
Without a token file the server only listens on a loopback address.

Asynchronous runs: POST /v1/runs takes the body of /v1/execute or /v1/test
(?kind=execute|test), answers 202 with an id at once, and GET /v1/runs/{id}
gives the state and the result. Runs are kept in --runs-db (SQLite, or
PostgreSQL with ASTER_RUNS_DATABASE_URL) for --runs-retention and survive a
restart; a run the server was running when it stopped is reported as an
error. A request's callback_url is POSTed the result, signed with the key in
--callback-secret-file, only when its host is on --callback-allow.

Limits a request asks for are capped by the --max-* ceilings (a request over
one is refused with 400, naming it). On SIGTERM the server stops accepting,
lets running jobs finish for --shutdown-grace, then cancels the rest and
destroys their sandboxes. Leaked sandboxes (after a crash) are reaped at
start-up and every reaper period. On SIGHUP the server re-reads the egress
profiles of sessions (egress.profiles, their value_files too): a file that
does not load leaves the profiles in force and is logged; live sessions are
decided by their profile's new definition (docs/sessions.md).

Every flag has an aster.yaml equivalent, most in the serve: section
(serve.addr, serve.max_concurrent, serve.ceilings.memory, ...); --images is
images:, --reaper-* reaper:, --warm pool.warm, and --egress-allow adds to
egress.allow. The main ones have an ASTER_* variable: ASTER_SERVE_ADDR,
ASTER_MAX_CONCURRENT, ASTER_QUEUE, ASTER_QUEUE_TIMEOUT, ASTER_TOKEN_FILE,
ASTER_MAX_BODY, ASTER_MAX_SPOOL, ASTER_MAX_BODY_IN_FLIGHT, ASTER_IMAGES.

Bodies: nothing is reserved for a request until the first byte of its body
arrives (--first-byte-timeout); a body that then stalls (--body-idle-timeout)
or falls under --min-body-rate is dropped with 408. A snapshot is spooled to
disk up to the request's own workdir_size, which it reserves in --max-spool
first (429 while the space is taken); a /v1/test's dependency archive counts
in the same share as it is written. A multipart body must send its spec
part before its workspace part. JSON bodies reserve their length in
--max-body-in-flight (429 past it). One remote address may have at most
--max-uploads-per-client snapshot uploads in progress (behind a proxy every
client has the proxy's address: raise it there).`,
		Example: `  aster sandbox serve
  aster sandbox serve --addr 0.0.0.0:8080 --token-file /etc/aster/tokens --max-concurrent 8
  curl -s localhost:8080/v1/execute -H 'Content-Type: application/json' -d '{"argv":["python3","-c","print(6*7)"]}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", config.DefaultServeAddr, "listen address")
	fl.StringVar(&f.maxConcurrent, "max-concurrent", "auto", "sandboxes alive at once, or auto (80% of host memory / default memory limit)")
	intStringVar(fl, &f.queue, "queue", "", fmt.Sprintf("runs that may wait for a slot (default %d × max-concurrent)", config.DefaultQueuePerSlot))
	fl.StringVar(&f.queueTimeout, "queue-timeout", config.DefaultQueueTimeout.String(), "how long a run may wait in the queue before a 429")
	fl.StringVar(&f.tokenFile, "token-file", "", "file of bearer tokens, one a line; required to listen on a non-loopback address")
	fl.StringVar(&f.images, "images", "", "comma-separated image allowlist; the first is the default (default "+config.DefaultImage+")")
	fl.StringVar(&f.maxBody, "max-body", units.FormatBytes(config.DefaultMaxBodyBytes), "largest request body (413 past it)")
	fl.StringVar(&f.shutdownGrace, "shutdown-grace", config.DefaultShutdownGrace.String(), "on SIGTERM, how long running jobs may finish before they are cancelled")
	fl.StringVar(&f.readHeaderTimeout, "read-header-timeout", config.DefaultReadHeaderTimeout.String(), "time a client has to send its request headers")
	fl.StringVar(&f.bodyReadTimeout, "body-read-timeout", config.DefaultBodyReadTimeout.String(), "time a client has to send its request body")
	fl.StringVar(&f.firstByteTimeout, "first-byte-timeout", config.DefaultFirstByteTimeout.String(), "time a client has between its headers and the first byte of its body; nothing is reserved for it before that byte")
	fl.StringVar(&f.bodyIdleTimeout, "body-idle-timeout", config.DefaultBodyIdleTimeout.String(), "longest wait for more of a request body")
	fl.StringVar(&f.minBodyRate, "min-body-rate", units.FormatBytes(config.DefaultMinBodyRate), "slowest average a request body may arrive at, per second, after the idle grace (0: not checked)")
	fl.StringVar(&f.maxSpool, "max-spool", "", fmt.Sprintf("disk all snapshots being spooled or held, and /v1/test's dependency archives, may take at once; each snapshot reserves its workdir_size (default %d × --max-workdir-size)", config.DefaultSpoolPerCeiling))
	fl.StringVar(&f.maxBodyInFlight, "max-body-in-flight", "", fmt.Sprintf("JSON request-body bytes held in memory at once; 429 past it (default %d × --max-body)", config.DefaultBodiesInFlight))
	intStringVar(fl, &f.maxUploadsPerClient, "max-uploads-per-client", "", "snapshot uploads in progress from one remote address (default: half of max-concurrent + queue; 0: no limit)")
	fl.StringVar(&f.writeTimeout, "write-timeout", config.DefaultWriteTimeout.String(), "time each write of a response may take before the client is dropped")
	fl.StringVar(&f.idleTimeout, "idle-timeout", config.DefaultIdleTimeout.String(), "how long an idle keep-alive connection stays open")
	fl.StringVar(&f.reaperPeriod, "reaper-period", "", "how often leaked sandboxes are reaped (default from config: "+units.FormatDuration(config.DefaultReaperPeriod)+")")
	fl.StringVar(&f.reaperGrace, "reaper-grace", "", "how long past its deadline a sandbox is left alone (default from config: "+units.FormatDuration(config.DefaultReaperGrace)+")")
	f.ceilings.register(fl, func(limit string) string {
		return "largest " + map[string]string{"timeout": "timeout", "memory": "memory limit", "cpus": "CPU limit",
			"pids": "process limit", "output_limit": "output_limit", "output_ceiling": "output_ceiling",
			"workdir_size": "/work", "tmp_size": "/tmp"}[limit] + " a request may ask for" +
			map[string]string{"workdir_size": " (also caps snapshots)"}[limit]
	})
	egressAllowVar(fl, &f.egressAllow)
	fl.StringVar(&f.runsDB, "runs-db", "", "SQLite file of the asynchronous runs of /v1/runs (default DATA_DIR/runs.db; off: keep none; serve.runs.database_url or ASTER_RUNS_DATABASE_URL: PostgreSQL instead)")
	fl.StringVar(&f.runsRetention, "runs-retention", units.FormatDuration(runstore.DefaultRetention), "how long a finished asynchronous run's result is kept")
	fl.StringVar(&f.runsMaxBytes, "runs-max-bytes", units.FormatBytes(runstore.DefaultMaxBytes), "results of asynchronous runs kept in all; the oldest go first")
	fl.StringSliceVar(&f.callbackAllow, "callback-allow", nil, "host or host:port a run's callback_url may name (repeatable; serve.callbacks.allow); none: no callbacks")
	fl.StringVar(&f.callbackSecretFile, "callback-secret-file", "", "file holding the HMAC-SHA256 key that signs every callback (X-Aster-Signature); required with --callback-allow")
	intStringVar(fl, &f.maxSessions, "max-sessions", "", "sessions (/v1/sessions) alive at once, all tokens together; each holds a sandbox slot (default: half of max-concurrent)")
	intStringVar(fl, &f.maxSessionsPerToken, "max-sessions-per-token", "", "sessions one token may hold (default 16)")
	fl.StringVar(&f.snapshotDir, "snapshot-dir", "", "directory of the session snapshots, emptied at start (default: a new temporary directory); serve.sessions has TTLs, idle timeouts and the snapshot budget")
	fl.IntVar(&f.warm, "warm", config.DefaultWarm, "sandboxes kept started and waiting per image, for requests with the default limits (0: no pool); they count against --max-concurrent (ASTER_WARM, pool.warm)")
	return cmd
}

// orNegative maps a settings value of 0 ("off") to the server option that
// means off (negative; zero there takes the default).
func orNegative(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

func orNegative64(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

func runServe(cmd *cobra.Command, g *globals, f *serveFlags) error {
	c, err := g.load(cmd)
	if err != nil {
		return err
	}
	sc, err := c.ServeSection(g.stdio.Getenv)
	if err != nil {
		return usageErr("%v", err)
	}
	fl := cmd.Flags()
	str := changedSetter(fl)
	f.serveSectionFlags.apply(fl, &sc)
	str("addr", &sc.Addr, f.addr)
	str("shutdown-grace", &sc.ShutdownGrace, f.shutdownGrace)
	str("read-header-timeout", &sc.ReadHeaderTimeout, f.readHeaderTimeout)
	str("body-read-timeout", &sc.BodyReadTimeout, f.bodyReadTimeout)
	str("first-byte-timeout", &sc.FirstByteTimeout, f.firstByteTimeout)
	str("body-idle-timeout", &sc.BodyIdleTimeout, f.bodyIdleTimeout)
	str("min-body-rate", &sc.MinBodyRate, f.minBodyRate)
	str("max-spool", &sc.MaxSpool, f.maxSpool)
	str("max-uploads-per-client", &sc.MaxUploadsPerClient, f.maxUploadsPerClient)
	str("write-timeout", &sc.WriteTimeout, f.writeTimeout)
	str("idle-timeout", &sc.IdleTimeout, f.idleTimeout)
	str("reaper-period", &c.Reaper.Period, f.reaperPeriod)
	str("reaper-grace", &c.Reaper.Grace, f.reaperGrace)
	str("runs-db", &sc.Runs.DB, f.runsDB)
	str("runs-retention", &sc.Runs.Retention, f.runsRetention)
	str("runs-max-bytes", &sc.Runs.MaxBytes, f.runsMaxBytes)
	str("callback-secret-file", &sc.Callbacks.SecretFile, f.callbackSecretFile)
	str("max-sessions", &sc.Sessions.Max, f.maxSessions)
	str("max-sessions-per-token", &sc.Sessions.MaxPerToken, f.maxSessionsPerToken)
	str("snapshot-dir", &sc.Sessions.SnapshotDir, f.snapshotDir)
	if fl.Changed("callback-allow") {
		sc.Callbacks.Allow = append(sc.Callbacks.Allow, f.callbackAllow...)
	}
	runsSet, err := sc.RunsSettings(g.stdio.Getenv, runstore.DefaultRetention, runstore.DefaultMaxBytes)
	if err != nil {
		return usageErr("%v", err)
	}
	if fl.Changed("images") {
		c.Images = config.SplitList(f.images)
	}
	if len(c.Images) == 0 {
		return usageErr("empty image allowlist")
	}

	defaults, set, err := serveSettings(c, sc)
	if err != nil {
		return err
	}
	if err := sandbox.CheckCeilings(defaults, set.Ceilings); err != nil {
		return usageErr("the default limits must be within the ceilings: %v", trimInvalid(err))
	}
	sessSet, err := sc.Sessions.Parse(set.MaxConcurrent)
	if err != nil {
		return usageErr("%v", err)
	}
	if _, _, err := c.ReaperDurations(); err != nil {
		return usageErr("%v", err)
	}
	if _, err := c.ReaperAllowance(); err != nil {
		return usageErr("%v", err)
	}
	var tokens *sandboxapi.Tokens
	if set.TokenFile != "" {
		if tokens, err = sandboxapi.LoadTokens(set.TokenFile); err != nil {
			return usageErr("%v", err)
		}
	}
	if err := sandboxapi.CheckListenAddr(set.Addr, tokens != nil); err != nil {
		return usageErr("%v", err)
	}
	log := g.logger(c)
	ctx := cmd.Context()
	egressPol, err := egressPolicy(c, f.egressAllow, log)
	if err != nil {
		return err
	}
	// Session profiles count into the same metrics as the install phases.
	profiles, err := c.EgressProfiles(log, egressPol.Counters)
	if err != nil {
		return usageErr("%v", err)
	}
	logProfiles(log, profiles)

	// Bind before starting anything, so a taken or refused address fails fast.
	ln, err := net.Listen("tcp", set.Addr)
	if err != nil {
		return &exitError{code: ExitFailure, err: fmt.Errorf("listen: %w", err)}
	}
	defer ln.Close()
	if err := sandboxapi.CheckExposure(ln.Addr(), tokens != nil); err != nil {
		return usageErr("%v", err)
	}

	rt, closeRT, err := startRuntime(c, log, ExitFailure)
	if err != nil {
		return err
	}
	defer closeRT()
	if err := rt.Check(ctx); err != nil {
		// Serve anyway: runs answer 503 until the engine is reachable.
		log.Warn("container engine unreachable at start-up; serving 503 until it is back", "err", err)
	}
	metrics := sandboxapi.NewMetrics()
	pc, err := c.PoolSection(g.stdio.Getenv)
	if err != nil {
		return usageErr("%v", err)
	}
	if fl.Changed("warm") {
		pc.Warm = strconv.Itoa(f.warm)
	}
	pool, err := pc.Parse()
	if err != nil {
		return usageErr("%v", err)
	}
	if pool.Warm*len(c.Images) >= set.MaxConcurrent && pool.Warm > 0 {
		return usageErr("--warm %d for %d images would hold all %d sandbox slots; lower it or raise --max-concurrent", pool.Warm, len(c.Images), set.MaxConcurrent)
	}
	// The result goes back as soon as it is known; the sandbox is destroyed
	// right after, still holding its slot.
	pool.BackgroundClose = true
	mgr, err := newManager(c, rt, sandbox.ManagerOptions{
		Defaults:      defaults,
		MaxConcurrent: set.MaxConcurrent,
		QueueSize:     set.QueueSize,
		QueueTimeout:  set.QueueTimeout,
		Pool:          pool,
		Sessions:      sessSet.Options,
		Observer:      metrics,
		Logger:        log,
	}, ExitFailure)
	if err != nil {
		return err
	}
	defer closeManager(ctx, mgr, log)
	if err := sandboxapi.RegisterPoolMetrics(metrics.Registry(), mgr); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	if err := sandboxapi.RegisterEgressMetrics(metrics.Registry(), egressPol); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	if err := startReaper(ctx, c, rt, mgr, log); err != nil {
		return usageErr("%v", err)
	}
	// POST /v1/validate: the static-analysis gate over an uploaded snapshot.
	validate := gate.NewValidator(gate.NewRunner(mgr, gate.RunnerOptions{Image: c.Images[0], Limits: defaults, Logger: log}), nil)
	tests, testSet, err := testRunner(c, egressPol, mgr, log)
	if err != nil {
		return err
	}
	var runs *runstore.Store
	if !runsSet.Off {
		runs, err = runstore.Open(ctx, runstore.Options{Path: runsSet.DB, PostgresURL: runsSet.DatabaseURL,
			Retention: runsSet.Retention, MaxBytes: runsSet.MaxBytes})
		if err != nil {
			return &exitError{code: ExitFailure, err: fmt.Errorf("%w (--runs-db off serves without asynchronous runs)", err)}
		}
		defer runs.Close()
	}
	srv, err := sandboxapi.New(sandboxapi.Options{
		Runs:              runs,
		Callbacks:         sandboxapi.Callbacks{Allow: runsSet.CallbackAllow, Secret: runsSet.CallbackSecret},
		Tests:             tests,
		CallerCacheKeys:   testSet.CallerCacheKeys,
		Validator:         validate,
		Egress:            egressPol,
		EgressProfiles:    profiles,
		Manager:           mgr,
		Tokens:            tokens,
		Metrics:           metrics,
		MaxBodyBytes:      set.MaxBodyBytes,
		Ceilings:          set.Ceilings,
		ReadHeaderTimeout: set.ReadHeaderTimeout,
		BodyReadTimeout:   set.BodyReadTimeout,
		WriteTimeout:      set.WriteTimeout,
		IdleTimeout:       set.IdleTimeout,
		ShutdownGrace:     set.ShutdownGrace,
		Logger:            log,

		MaxSpoolBytes:        set.MaxSpoolBytes,
		MaxBodyInFlightBytes: set.MaxBodyInFlightBytes,
		MaxUploadsPerClient:  orNegative(set.MaxUploadsPerClient),
		FirstByteTimeout:     set.FirstByteTimeout,
		BodyIdleTimeout:      set.BodyIdleTimeout,
		MinBodyRate:          orNegative64(set.MinBodyRateBytes),

		MaxSessions:         sessSet.Max,
		MaxSessionsPerToken: sessSet.PerToken,
		SnapshotDir:         sessSet.SnapshotDir,
		MaxSnapshotBytes:    sessSet.MaxSnapshotBytes,
	})
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	// SIGHUP re-reads egress.profiles (and their value_files); a bad
	// file leaves the set in force.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go reloadProfiles(ctx, hup, func() (map[string]*egress.Policy, error) {
		c, err := g.load(cmd)
		if err != nil {
			return nil, err
		}
		return c.EgressProfiles(log, egressPol.Counters)
	}, srv, log)
	log.Info("serving the sandbox API", "url", "http://"+ln.Addr().String(), "auth", tokens != nil,
		"max_concurrent", set.MaxConcurrent, "queue", set.QueueSize, "queue_timeout", set.QueueTimeout,
		"images", strings.Join(c.Images, ","), "runtime", rt.Name(), "warm", pool.Warm, "max_sessions", sessSet.Max)
	if err := srv.Serve(ctx, ln); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	return nil
}

// logProfiles logs each egress profile for sessions.
func logProfiles(log *slog.Logger, profiles map[string]*egress.Policy) {
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		p := profiles[name]
		hosts := make([]string, len(p.Allow))
		for i, r := range p.Allow {
			hosts[i] = r.String()
		}
		log.Info("egress profile for sessions", "profile", name, "hosts", strings.Join(hosts, ","),
			"credentials", strings.Join(p.CredentialHosts(), ","), "max_bytes", p.MaxBytes, "max_connections", p.MaxConns)
	}
}

// reloadProfiles replaces the server's egress profiles with load's at each
// signal on hup until ctx ends. A set that does not load whole is logged
// and the set in force stays.
func reloadProfiles(ctx context.Context, hup <-chan os.Signal, load func() (map[string]*egress.Policy, error), srv *sandboxapi.Server, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		profiles, err := load()
		if err != nil {
			log.Error("egress profiles not reloaded: the profiles in force stay", "err", err)
			continue
		}
		logProfiles(log, profiles)
		sum := srv.SetEgressProfiles(profiles)
		log.Info("egress profiles reloaded", "profiles", strings.Join(sum.Profiles, ","),
			"sessions_kept", sum.Kept, "sessions_changed", sum.Changed, "sessions_cleared", sum.Cleared)
	}
}

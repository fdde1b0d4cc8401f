package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/workspace"
)

// Observer receives the Manager's events, for metrics. Every method must be
// cheap and safe for concurrent use.
type Observer interface {
	RunStarted()
	RunFinished(status Status, d time.Duration)
	Rejected(reason string) // "queue_full", "queue_timeout"
	QueueDepth(n int)
	Running(n int)
}

// PhaseObserver is an Observer that also wants where each finished run's time went:
// Result.Timings by phase (admission, queue, prepare, create, start, init, job, remove,
// total, warm), for per-phase histograms. Called once per run that got a sandbox slot.
type PhaseObserver interface {
	RunPhases(runtime string, timings map[string]time.Duration)
}

// TeardownObserver is an Observer that also wants how long the removal of a run's
// sandbox took when it happens after the result (PoolOptions.BackgroundClose), where
// no Result carries it. A removal on the response path is the "remove" phase of
// RunPhases instead.
type TeardownObserver interface {
	RunTeardown(runtime string, d time.Duration)
}

// SessionObserver is an Observer that also wants the sessions' events: one
// opened, one ended (why, after how long), paused or resumed, and each exec's
// status and time.
type SessionObserver interface {
	SessionOpened()
	SessionEnded(reason string, life time.Duration)
	SessionPaused(paused bool)
	SessionExec(status Status, d time.Duration)
}

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	Runtime Runtime
	// Images is the allowlist; the first is the default image.
	Images []string
	// Defaults fill the limits a request leaves zero. They must lie within
	// Bounds.
	Defaults Limits
	// Bounds are required: every run's limits are checked against them after
	// Defaults are applied (LimitBounds gives the standard ones).
	Bounds Bounds
	// MaxConcurrent bounds live sandboxes; QueueSize bounds the waiters behind
	// them, and QueueTimeout how long each may wait.
	MaxConcurrent int
	QueueSize     int
	QueueTimeout  time.Duration
	// HostTasks is the host task budget (hosttasks.go): the host tasks the
	// sandboxes alive at once may create together, each charged what its
	// runtime says (HostTaskCharger). A run that does not fit waits in the
	// queue. 0 is what this host affords (HostTaskBudget). Unused with a
	// runtime that charges nothing.
	HostTasks int64
	// PrepareAllowance is added to a sandbox's deadline label to cover its
	// creation and teardown.
	PrepareAllowance time.Duration
	// Pool configures the warm pool and background teardown (pool.go).
	Pool PoolOptions
	// Sessions are the operator's session settings (session.go).
	Sessions SessionOptions
	Observer Observer
	Logger   *slog.Logger
}

// Manager is the single entry point for running sandboxes: it validates specs,
// applies admission control, prepares a fresh sandbox per run, runs the job and
// destroys the sandbox.
type Manager struct {
	opts  ManagerOptions
	adm   *admission
	log   *slog.Logger
	obs   Observer
	clock func() time.Time

	// charger is the runtime as a HostTaskCharger; nil when it charges
	// nothing.
	charger HostTaskCharger

	imgMu    sync.Mutex
	imgCache map[string]imageEntry

	liveMu sync.Mutex
	live   map[string]struct{} // sandboxes this Manager holds, by runtime id

	pool *pool
}

type imageEntry struct {
	info ImageInfo
	at   time.Time
}

// NewManager returns a Manager.
func NewManager(opts ManagerOptions) (*Manager, error) {
	if opts.Runtime == nil {
		return nil, errors.New("manager: no runtime")
	}
	if len(opts.Images) == 0 {
		return nil, errors.New("manager: empty image allowlist")
	}
	if err := opts.Bounds.valid(); err != nil {
		return nil, fmt.Errorf("manager: limit bounds (config.LimitBounds): %w", err)
	}
	if err := opts.Bounds.Check(opts.Defaults); err != nil {
		return nil, fmt.Errorf("manager: default limits: %w", err)
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 1
	}
	if opts.QueueSize < 0 {
		opts.QueueSize = 0
	}
	if opts.QueueTimeout <= 0 {
		opts.QueueTimeout = 30 * time.Second
	}
	if opts.PrepareAllowance <= 0 {
		opts.PrepareAllowance = 2 * time.Minute
	}
	charger, _ := opts.Runtime.(HostTaskCharger)
	if charger == nil {
		opts.HostTasks = 0
	} else {
		if opts.HostTasks <= 0 {
			budget, err := HostTaskBudget()
			if err != nil {
				return nil, fmt.Errorf("manager: %w (set the host task budget explicitly)", err)
			}
			opts.HostTasks = budget
		}
		if n := charger.HostTasks(opts.Defaults); n > opts.HostTasks {
			return nil, fmt.Errorf("manager: a sandbox at the default pids limit (%d) costs up to %d host tasks on the %s runtime, more than the host task budget of %d",
				opts.Defaults.Pids, n, opts.Runtime.Name(), opts.HostTasks)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	obs := opts.Observer
	if obs == nil {
		obs = nopObserver{}
	}
	m := &Manager{
		opts:     opts,
		adm:      newAdmission(opts.MaxConcurrent, opts.QueueSize, opts.HostTasks, obs),
		charger:  charger,
		log:      log,
		obs:      obs,
		clock:    time.Now,
		imgCache: map[string]imageEntry{},
		live:     map[string]struct{}{},
	}
	m.pool = newPool(m, opts.Pool)
	return m, nil
}

// Runtime returns the runtime the Manager drives.
func (m *Manager) Runtime() Runtime { return m.opts.Runtime }

// DefaultImage returns the image used when a spec names none.
func (m *Manager) DefaultImage() string { return m.opts.Images[0] }

// SessionMaxTTL is the longest life of a session of this Manager.
func (m *Manager) SessionMaxTTL() time.Duration { return m.opts.Sessions.withDefaults().MaxTTL }

// Images returns the allowlist.
func (m *Manager) Images() []string { return slices.Clone(m.opts.Images) }

// Limits returns the default limits.
func (m *Manager) Limits() Limits { return m.opts.Defaults }

// Stats is a snapshot of admission control.
type Stats struct {
	Running       int           // runs holding a sandbox slot
	Queued        int           // runs waiting for one
	MaxConcurrent int           // slots
	QueueSize     int           // places in the queue
	QueueTimeout  time.Duration // how long a run may wait
	// HostTasks is what the admitted sandboxes are charged of the host task
	// budget, HostTaskBudget (0 when the runtime charges nothing).
	HostTasks      int64
	HostTaskBudget int64
}

// Stats returns the admission counters now.
func (m *Manager) Stats() Stats {
	running, queued, tasks := m.adm.stats()
	return Stats{Running: running, Queued: queued, MaxConcurrent: m.opts.MaxConcurrent, QueueSize: m.opts.QueueSize, QueueTimeout: m.opts.QueueTimeout,
		HostTasks: tasks, HostTaskBudget: m.opts.HostTasks}
}

// Drain stops admitting runs: later calls to Run and the runs still queued
// fail with ErrUnavailable ("shutting down"); runs already holding a slot
// continue. Used for graceful shutdown.
func (m *Manager) Drain() {
	m.adm.drain()
	m.pool.shutdown()
}

// PoolStats returns a snapshot of every warm pool (none when Warm is 0).
func (m *Manager) PoolStats() []PoolStats { return m.pool.stats() }

// WaitWarm blocks until every warm pool holds its target, or ctx ends.
// Benchmarks and tests use it to measure warm runs; a server need not.
func (m *Manager) WaitWarm(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		full := true
		for _, s := range m.PoolStats() {
			if s.Ready < s.Target {
				full = false
			}
		}
		if full {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// Close stops the warm pool, destroys its idle sandboxes, stops admitting
// runs (as Drain) and waits, until ctx ends, for every sandbox this Manager
// is still destroying in the background. Runs in progress are not waited for.
func (m *Manager) Close(ctx context.Context) error {
	m.Drain()
	return m.pool.wait(ctx)
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Normalize applies defaults to spec and validates it. It starts nothing.
func (m *Manager) Normalize(spec Spec) (Spec, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return spec, Invalidf("no command given")
	}
	if spec.Image == "" {
		spec.Image = m.DefaultImage()
	}
	if !slices.Contains(m.opts.Images, spec.Image) {
		return spec, fmt.Errorf("%w: %q is not on the image allowlist (%v)", ErrUnknownImage, spec.Image, m.opts.Images)
	}
	spec.Limits = spec.Limits.WithDefaults(m.opts.Defaults)
	if err := m.opts.Bounds.Check(spec.Limits); err != nil {
		return spec, err
	}
	if err := m.checkHostTasks(spec.Limits); err != nil {
		return spec, err
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		if !envKey.MatchString(k) {
			return spec, Invalidf("environment variable name %q is not valid", k)
		}
	}
	if spec.Workspace.Tar != nil && len(spec.Workspace.Files) > 0 {
		return spec, Invalidf("give files or a tar archive, not both")
	}
	if len(spec.Workspace.Files) > 0 {
		// Packing validates names and sizes; do it now so that a bad name is
		// refused before anything starts, and keep the archive, so that the
		// files are packed once however often the spec is handled.
		var buf bytes.Buffer
		if _, err := workspace.PackFiles(spec.Workspace.Files, &buf, workspace.Caps{MaxBytes: spec.Limits.WorkdirBytes}); err != nil {
			return spec, WorkspaceError("workspace", err, ErrInvalidSpec)
		}
		spec.Workspace = Workspace{Tar: bytes.NewReader(buf.Bytes()), Filtered: true}
	}
	if spec.ID == "" {
		spec.ID = NewRunID()
	}
	if _, err := JobHeader(JobFromSpec(spec)); err != nil {
		return spec, err
	}
	return spec, nil
}

// Run runs spec in a fresh sandbox and destroys it. The returned Result always
// has a Status; err classifies failures (ErrInvalidSpec, ErrBusy, ...).
func (m *Manager) Run(ctx context.Context, spec Spec) (Result, error) {
	return m.RunWithOptions(ctx, spec, RunOptions{})
}

// RunOptions are per-call hooks of RunWithOptions.
type RunOptions struct {
	// Admitted, when set, is called once the run holds a sandbox slot, before
	// its sandbox is prepared (the HTTP API sends its streaming headers then).
	Admitted func()
	// Received, when set, is when the request behind the run arrived: the
	// "admission" phase runs from it until the run joins the queue (reading
	// and checking the request, normalising its spec, spooling its
	// workspace). Unset, admission starts when RunWithOptions is called.
	Received time.Time
	// Normalized says spec is what this Manager's Normalize returned,
	// changed since in OnOutput at most, so it is not checked again (the
	// HTTP API normalises a request before it answers, then runs it). The
	// runtimes still refuse limits they must not act on.
	Normalized bool
}

// RunWithOptions is Run with per-call hooks.
func (m *Manager) RunWithOptions(ctx context.Context, spec Spec, opts RunOptions) (Result, error) {
	received := opts.Received
	if received.IsZero() {
		received = m.clock()
	}
	if !opts.Normalized {
		var err error
		if spec, err = m.Normalize(spec); err != nil {
			return failed(spec, err), err
		}
	}
	if spec.Workspace.Tar != nil && !spec.Workspace.Filtered {
		// Validate an untrusted archive before admission: a hostile one is
		// refused with nothing started and no slot taken.
		// The copy sent to the sandbox is the normalised one.
		spooled, err := workspace.Spool(spec.Workspace.Tar, workspace.SpoolOptions{Caps: workspace.Caps{MaxBytes: spec.Limits.WorkdirBytes}})
		if err != nil {
			err = WorkspaceError("workspace", err, ErrInvalidSpec)
			return failed(spec, err), err
		}
		defer spooled.Close()
		spec.Workspace.Tar = spooled.Reader()
	}
	queued := m.clock()
	warm, tasks, err := m.admit(ctx, spec)
	if err != nil {
		return failed(spec, err), err
	}
	waited := m.clock().Sub(queued)
	if opts.Admitted != nil {
		opts.Admitted()
	}
	m.obs.RunStarted()
	start := m.clock()
	res, err := m.run(ctx, spec, warm, tasks)
	if res.Timings != nil {
		res.Timings["queue"] = waited
		res.Timings["admission"] = max(queued.Sub(received), 0)
	}
	m.obs.RunFinished(res.Status, time.Since(start))
	if po, ok := m.obs.(PhaseObserver); ok && res.Timings != nil {
		po.RunPhases(res.Runtime, res.Timings)
	}
	return res, err
}

// run runs spec in warm (a pooled sandbox, already holding the run's slot) or
// in a sandbox prepared now; either way the sandbox is destroyed and the slot
// and the tasks it was charged freed by finish.
func (m *Manager) run(ctx context.Context, spec Spec, warm *warmEntry, tasks int64) (Result, error) {
	log := m.log.With("run", spec.ID)
	img, err := m.imageInfo(ctx, spec.Image)
	if err != nil {
		if warm != nil {
			m.finish(ctx, warm.inst, tasks, log)
		} else {
			m.adm.release(tasks)
		}
		return failed(spec, err), err
	}
	t0 := m.clock()
	var inst Instance
	if warm != nil {
		inst = warm.inst
	} else {
		inst, err = m.opts.Runtime.Prepare(ctx, PrepareOptions{
			RunID:    spec.ID,
			Image:    spec.Image,
			Limits:   spec.Limits,
			Deadline: t0.Add(spec.Limits.Timeout() + KillGrace + HostGrace + m.opts.PrepareAllowance + exportAllowance(spec.Export != nil)),
		})
		if err != nil {
			m.adm.release(tasks)
			res := failed(spec, err)
			res.ImageDigest = img.Digest
			if ctx.Err() != nil {
				// The caller went away while its sandbox was being made.
				res.Status, res.Error = StatusKilled, "cancelled: "+context.Cause(ctx).Error()
				return res, nil
			}
			log.Warn("prepare sandbox", "err", err)
			return res, err
		}
		m.track(inst.ID(), true)
	}
	prepared := m.clock().Sub(t0)
	res, runErr := inst.Run(ctx, JobFromSpec(spec))
	ran := m.clock().Sub(t0)
	closed, background := m.finish(ctx, inst, tasks, log)
	res.ID = spec.ID
	res.Image = spec.Image
	res.ImageDigest = img.Digest
	res.Runtime = m.opts.Runtime.Name()
	if res.Timings == nil {
		res.Timings = map[string]time.Duration{}
	}
	res.Timings["prepare"] = prepared
	if warm != nil {
		res.Timings["warm"] = t0.Sub(warm.created) // how long it waited in the pool
	}
	if !background {
		res.Timings["remove"] = closed
	}
	res.Timings["total"] = ran + closed
	log.Debug("run finished", "status", res.Status, "exit", res.ExitCode, "ms", res.Timings["total"].Milliseconds())
	return res, runErr
}

// admit gives a run its sandbox slot and the host tasks it is charged: a
// warm sandbox's (returned), free ones, or a place in the queue. When the
// run does not fit and idle warm sandboxes hold what it lacks, they are
// destroyed to make room: real runs come before spare capacity. It returns
// what the run is charged.
func (m *Manager) admit(ctx context.Context, spec Spec) (*warmEntry, int64, error) {
	if w := m.pool.take(spec); w != nil {
		return w, w.tasks, nil
	}
	tasks := m.hostTasks(spec.Limits)
	if m.adm.tryAcquire(tasks) {
		return nil, tasks, nil
	}
	m.pool.evict(m.adm.shortfall(tasks))
	return nil, tasks, m.adm.acquire(ctx, m.opts.QueueTimeout, tasks)
}

// finish destroys a used sandbox and frees its slot and its tasks: before
// returning, or in the background with BackgroundClose. It returns how long
// the close took when it was waited for.
func (m *Manager) finish(ctx context.Context, inst Instance, tasks int64, log *slog.Logger) (closed time.Duration, background bool) {
	closeIt := func() time.Duration {
		t0 := m.clock()
		if err := inst.Close(context.WithoutCancel(ctx)); err != nil {
			log.Warn("destroy sandbox", "err", err)
		}
		d := m.clock().Sub(t0)
		m.track(inst.ID(), false)
		m.adm.release(tasks)
		m.pool.kickRefill()
		return d
	}
	if !m.opts.Pool.BackgroundClose {
		return closeIt(), false
	}
	m.pool.closeWG.Add(1)
	go func() {
		defer m.pool.closeWG.Done()
		d := closeIt()
		if to, ok := m.obs.(TeardownObserver); ok {
			to.RunTeardown(m.opts.Runtime.Name(), d)
		}
	}()
	return 0, true
}

func (m *Manager) track(id string, alive bool) {
	m.liveMu.Lock()
	defer m.liveMu.Unlock()
	if alive {
		m.live[id] = struct{}{}
	} else {
		delete(m.live, id)
	}
}

// Holds reports whether this Manager currently holds the sandbox with the given
// runtime id. The reaper skips those: a slow engine can push a live run past
// its deadline label, and this process knows it is still wanted.
func (m *Manager) Holds(id string) bool {
	m.liveMu.Lock()
	defer m.liveMu.Unlock()
	_, ok := m.live[id]
	return ok
}

func (m *Manager) imageInfo(ctx context.Context, image string) (ImageInfo, error) {
	m.imgMu.Lock()
	e, ok := m.imgCache[image]
	m.imgMu.Unlock()
	if ok && m.clock().Sub(e.at) < 30*time.Second {
		return e.info, nil
	}
	info, err := m.opts.Runtime.ImageInfo(ctx, image)
	if err != nil {
		return ImageInfo{}, err
	}
	m.imgMu.Lock()
	m.imgCache[image] = imageEntry{info: info, at: m.clock()}
	m.imgMu.Unlock()
	return info, nil
}

// failed is the Result for a run that never started.
func failed(spec Spec, err error) Result {
	return Result{ID: spec.ID, Status: StatusError, ExitCode: -1, Image: spec.Image, Error: err.Error(), Timings: map[string]time.Duration{}}
}

// NewRunID returns a fresh run id such as "r-3f9a0c1d2e4b".
func NewRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "r-" + hex.EncodeToString(b[:])
}

type nopObserver struct{}

func (nopObserver) RunStarted()                       {}
func (nopObserver) RunFinished(Status, time.Duration) {}
func (nopObserver) Rejected(string)                   {}
func (nopObserver) QueueDepth(int)                    {}
func (nopObserver) Running(int)                       {}

// exportAllowance is the time past the command's end a sandbox may still be
// needed for: the export of /work, when one is asked for.
func exportAllowance(export bool) time.Duration {
	if export {
		return ExportTimeout
	}
	return 0
}

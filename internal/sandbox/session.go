package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/units"
	"github.com/asterhq/aster/internal/workspace"
)

// SessionRuntime is a Runtime that can hold one sandbox across many jobs: its
// PID 1 is aster-init in hold mode, and each job is a further aster-init the
// runtime starts inside it, speaking the one-shot protocol.
type SessionRuntime interface {
	PrepareSession(ctx context.Context, opts PrepareOptions) (SessionInstance, error)
}

// SessionInstance is a held sandbox. Exec may be called concurrently; every
// limit that shapes the sandbox (memory, CPU, pids, tmpfs sizes, no network)
// holds for all its jobs together, the per-job ones (timeout, output) for each.
type SessionInstance interface {
	ID() string
	// Exec runs one job in the sandbox and returns its Result, with the same
	// statuses as a one-shot run. A job that ends the sandbox (its host side
	// cannot be trusted any more) closes Done.
	Exec(ctx context.Context, job Job) (Result, error)
	// Done is closed once the sandbox is gone.
	Done() <-chan struct{}
	// Close destroys the sandbox with everything in it. Safe to call twice.
	Close(ctx context.Context) error
}

// ErrSessionGone: the session does not exist (never did, belongs to someone
// else, or has ended). The public api.ErrNotFound, HTTP 404.
var ErrSessionGone = fmt.Errorf("%w: session", api.ErrNotFound)

// SessionSpec asks for a session.
type SessionSpec struct {
	// ID names the session; empty means one is generated (unguessable).
	ID     string
	Image  string
	Limits Limits
	// Env is added to every exec's environment (an exec's own Env wins).
	Env map[string]string
	// Files are placed at /work before the session is returned.
	Files map[string][]byte
	// Archive, when set, is an uncompressed tar archive unpacked into /work
	// before Files (a snapshot the session starts from).
	Archive io.Reader
	// Memory, when set, is a memory snapshot the session is restored from
	// (a fork: its processes, memory, /work and /tmp as they were); Image and
	// Limits must then be empty or the snapshot's own.
	Memory *MemorySnapshot
	// TTL is the session's whole life; IdleTimeout ends it after that long
	// without a call. Zero takes the Manager's default; above the ceiling is
	// refused.
	TTL, IdleTimeout time.Duration
	// Egress, when set, is the session's way out for its commands (not its
	// file operations): each exec gets aster-init's CONNECT proxy on a
	// loopback port of its own and the proxy variables naming it. The
	// caller's Dialer decides every tunnel (an *egress.Switch, whose policy
	// the operator changes while the session runs); when it has a Close
	// method, the session's end calls it.
	Egress Dialer
}

// SessionOptions are the operator's session settings of a Manager.
type SessionOptions struct {
	// DefaultTTL and MaxTTL: a session's whole life (default 30m, ceiling 24h).
	DefaultTTL, MaxTTL time.Duration
	// DefaultIdle and MaxIdle: the idle timeout (default 10m, ceiling MaxTTL).
	DefaultIdle, MaxIdle time.Duration
	// MaxExecs bounds the execs running at once in one session (default 8).
	MaxExecs int
	// MaxFileBytes caps a file read through GetFile (default 16 MiB; never
	// above the session's /work size).
	MaxFileBytes int64
	// MaxArchiveBytes caps a directory archive read through GetArchive
	// (default 256 MiB; never much above the session's /work size).
	MaxArchiveBytes int64
}

func (o SessionOptions) withDefaults() SessionOptions {
	if o.DefaultTTL <= 0 {
		o.DefaultTTL = 30 * time.Minute
	}
	if o.MaxTTL <= 0 {
		o.MaxTTL = 24 * time.Hour
	}
	o.DefaultTTL = min(o.DefaultTTL, o.MaxTTL)
	if o.MaxIdle <= 0 {
		o.MaxIdle = o.MaxTTL
	}
	if o.DefaultIdle <= 0 {
		o.DefaultIdle = 10 * time.Minute
	}
	o.DefaultIdle = min(o.DefaultIdle, o.MaxIdle)
	if o.MaxExecs <= 0 {
		o.MaxExecs = 8
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 16 << 20
	}
	if o.MaxArchiveBytes <= 0 {
		o.MaxArchiveBytes = 256 << 20
	}
	return o
}

// Sandbox is a live session: a held sandbox and its lifetime.
type Sandbox struct {
	m       *Manager
	inst    SessionInstance
	id      string
	image   string
	digest  string
	limits  Limits
	env     map[string]string
	created time.Time
	expires time.Time
	idle    time.Duration
	tasks   int64

	mu       sync.Mutex
	lastUsed time.Time
	running  int
	paused   bool
	closed   bool
	reason   string // why it ended: "deleted", "ttl", "idle", "sandbox ended"
	timer    *time.Timer
	done     chan struct{}

	egress Dialer
	// proxyPorts are the egress proxy ports of the execs running now.
	proxyPorts map[int]bool
}

// SessionInfo describes a session.
type SessionInfo struct {
	ID          string
	Image       string
	ImageDigest string
	Runtime     string
	Limits      Limits
	Created     time.Time
	ExpiresAt   time.Time // end of the TTL
	IdleTimeout time.Duration
	LastUsed    time.Time
	Running     int // execs running now
	Paused      bool
}

// OpenSession validates spec, admits it (a session holds a sandbox slot and
// its host tasks for its whole life), prepares a held sandbox, places
// spec.Files and returns it. It ends at Close, its TTL or its idle timeout.
func (m *Manager) OpenSession(ctx context.Context, spec SessionSpec) (*Sandbox, error) {
	sr, ok := m.opts.Runtime.(SessionRuntime)
	if !ok {
		return nil, fmt.Errorf("%w: the %s runtime does not hold sessions", ErrUnavailable, m.opts.Runtime.Name())
	}
	so := m.opts.Sessions.withDefaults()
	if spec.Memory != nil {
		if err := spec.forkOf(m.opts.Runtime); err != nil {
			return nil, err
		}
	}
	if spec.Image == "" {
		spec.Image = m.DefaultImage()
	}
	if !slices.Contains(m.opts.Images, spec.Image) {
		return nil, fmt.Errorf("%w: %q is not on the image allowlist (%v)", ErrUnknownImage, spec.Image, m.opts.Images)
	}
	spec.Limits = spec.Limits.WithDefaults(m.opts.Defaults)
	if err := m.opts.Bounds.Check(spec.Limits); err != nil {
		return nil, err
	}
	if err := m.checkHostTasks(spec.Limits); err != nil {
		return nil, err
	}
	if err := checkEnv(spec.Env); err != nil {
		return nil, err
	}
	switch {
	case spec.TTL < 0, spec.IdleTimeout < 0:
		return nil, Invalidf("ttl and idle_timeout must not be negative")
	case spec.TTL == 0:
		spec.TTL = so.DefaultTTL
	}
	if spec.TTL > so.MaxTTL {
		return nil, Invalidf("ttl %s is above this server's ceiling of %s", spec.TTL, so.MaxTTL)
	}
	if spec.IdleTimeout == 0 {
		spec.IdleTimeout = so.DefaultIdle
	}
	if spec.IdleTimeout > so.MaxIdle {
		return nil, Invalidf("idle_timeout %s is above this server's ceiling of %s", spec.IdleTimeout, so.MaxIdle)
	}
	if len(spec.Files) > 0 {
		if _, err := workspace.PackFiles(spec.Files, io.Discard, workspace.Caps{MaxBytes: spec.Limits.WorkdirBytes}); err != nil {
			return nil, WorkspaceError("files", err, ErrInvalidSpec)
		}
	}
	if spec.ID == "" {
		spec.ID = NewSessionID()
	}
	img, err := m.imageInfo(ctx, spec.Image)
	if err != nil {
		return nil, err
	}
	tasks := m.hostTasks(spec.Limits)
	if !m.adm.tryAcquire(tasks) {
		m.pool.evict(m.adm.shortfall(tasks))
		if err := m.adm.acquire(ctx, m.opts.QueueTimeout, tasks); err != nil {
			return nil, err
		}
	}
	now := m.clock()
	popts := PrepareOptions{
		RunID:    spec.ID,
		Image:    spec.Image,
		Limits:   spec.Limits,
		Deadline: now.Add(spec.TTL + m.opts.PrepareAllowance),
	}
	var inst SessionInstance
	if spec.Memory != nil {
		inst, err = m.opts.Runtime.(RestoreRuntime).RestoreSession(ctx, popts, spec.Memory.Dir)
	} else {
		inst, err = sr.PrepareSession(ctx, popts)
	}
	if err != nil {
		m.adm.release(tasks)
		return nil, err
	}
	m.track(inst.ID(), true)
	if so, ok := m.obs.(SessionObserver); ok {
		so.SessionOpened()
	}
	s := &Sandbox{
		m: m, inst: inst, id: spec.ID, image: spec.Image, digest: img.Digest, limits: spec.Limits,
		env: maps.Clone(spec.Env), created: now, expires: now.Add(spec.TTL), idle: spec.IdleTimeout,
		tasks: tasks, lastUsed: now, done: make(chan struct{}), egress: spec.Egress,
	}
	s.timer = time.AfterFunc(s.nextDeadline(now), s.expire)
	go func() {
		// A sandbox that ended by itself (destroyed after a broken exec)
		// ends the session.
		<-inst.Done()
		// The execs it ended give their verdicts first: an OOM verdict
		// reads the sandbox's cgroup, which destroying it removes (gVisor:
		// an OOM kill ends the whole sandbox).
		s.awaitExecs(execVerdictWait)
		s.end(context.Background(), "sandbox ended")
	}()
	if spec.Archive != nil {
		if err := s.PutArchive(ctx, "", spec.Archive); err != nil {
			s.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	if len(spec.Files) > 0 {
		for _, name := range slices.Sorted(maps.Keys(spec.Files)) {
			if err := s.PutFile(ctx, name, spec.Files[name]); err != nil {
				s.Close(context.WithoutCancel(ctx))
				return nil, err
			}
		}
	}
	m.log.Debug("session opened", "session", s.id, "sandbox", inst.ID(), "ttl", spec.TTL, "idle", spec.IdleTimeout)
	return s, nil
}

// execVerdictWait bounds how long a sandbox that ended by itself is kept
// for the verdicts of the execs it ended.
const execVerdictWait = 10 * time.Second

// awaitExecs waits, at most d, until no exec of the session runs.
func (s *Sandbox) awaitExecs(d time.Duration) {
	limit := time.Now().Add(d)
	for time.Now().Before(limit) {
		s.mu.Lock()
		n := s.running
		s.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// NewSessionID returns an unguessable session id (128 random bits).
func NewSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "s-" + hex.EncodeToString(b[:])
}

func checkEnv(env map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !envKey.MatchString(k) {
			return Invalidf("environment variable name %q is not valid", k)
		}
	}
	return nil
}

// ID is the session's id.
func (s *Sandbox) ID() string { return s.id }

// Done is closed when the session has ended.
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Info describes the session now.
func (s *Sandbox) Info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SessionInfo{ID: s.id, Image: s.image, ImageDigest: s.digest, Runtime: s.m.opts.Runtime.Name(), Limits: s.limits,
		Created: s.created, ExpiresAt: s.expires, IdleTimeout: s.idle, LastUsed: s.lastUsed, Running: s.running, Paused: s.paused}
}

// EndReason says why the session ended ("" while it lives).
func (s *Sandbox) EndReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// nextDeadline is how long from now until the session must be checked: its
// TTL or its idle timeout, whichever comes first. Called under s.mu or before
// the session is shared.
func (s *Sandbox) nextDeadline(now time.Time) time.Duration {
	return max(min(s.expires.Sub(now), s.lastUsed.Add(s.idle).Sub(now)), 0)
}

// expire ends the session when its TTL or idle timeout has passed, or
// re-arms the timer. An exec running keeps it from being idle, never from
// its TTL.
func (s *Sandbox) expire() {
	now := s.m.clock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	reason := ""
	switch {
	case !now.Before(s.expires):
		reason = "ttl"
	case s.running == 0 && !now.Before(s.lastUsed.Add(s.idle)):
		reason = "idle"
	}
	if reason == "" {
		d := s.nextDeadline(now)
		if s.running > 0 {
			d = max(min(s.expires.Sub(now), s.idle), time.Second)
		}
		s.timer.Reset(d)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.end(context.Background(), reason)
}

// Close ends the session: its sandbox is destroyed with everything in it,
// running execs included, and its admission slot freed.
func (s *Sandbox) Close(ctx context.Context) error {
	return s.end(ctx, "deleted")
}

func (s *Sandbox) end(ctx context.Context, reason string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.reason = reason
	s.timer.Stop()
	if s.paused {
		// Thawed first, so that its init sees its stdin close and exits; a
		// failure leaves the runtime's forced destroy to end it.
		if err := s.resumeLocked(context.WithoutCancel(ctx)); err != nil {
			s.m.log.Warn("resume before close", "session", s.id, "err", err)
		}
	}
	s.mu.Unlock()
	if so, ok := s.m.obs.(SessionObserver); ok {
		so.SessionEnded(reason, s.m.clock().Sub(s.created))
	}
	// Done is closed once the sandbox is gone: destroying it ends every
	// exec still running.
	err := s.inst.Close(context.WithoutCancel(ctx))
	if c, ok := s.egress.(interface{ Close() }); ok {
		c.Close()
	}
	close(s.done)
	s.m.track(s.inst.ID(), false)
	s.m.adm.release(s.tasks)
	s.m.pool.kickRefill()
	s.m.log.Debug("session ended", "session", s.id, "reason", reason)
	if err != nil {
		return fmt.Errorf("destroy session %s: %w", s.id, err)
	}
	return nil
}

// ExecSpec is one command in a session.
type ExecSpec struct {
	Argv    []string
	Env     map[string]string // added to the session's
	Workdir string            // relative to /work
	Stdin   io.Reader
	// Timeout, OutputBytes and OutputCeilingBytes: zero takes the session's.
	TimeoutMS, OutputBytes, OutputCeilingBytes int64
	OnOutput                                   func(stream Stream, data []byte)
}

// begin marks an exec as running; it fails when the session has ended or
// runs its most execs already.
func (s *Sandbox) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w %s has ended (%s)", ErrSessionGone, s.id, s.reason)
	}
	if s.running >= s.m.opts.Sessions.withDefaults().MaxExecs {
		return fmt.Errorf("%w: session %s already runs %d commands; wait for one to end", ErrBusy, s.id, s.running)
	}
	// Any call wakes a paused session.
	if err := s.resumeLocked(context.Background()); err != nil {
		return err
	}
	s.running++
	s.lastUsed = s.m.clock()
	return nil
}

func (s *Sandbox) finishExec() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	s.lastUsed = s.m.clock()
	if !s.closed {
		s.timer.Reset(s.nextDeadline(s.lastUsed))
	}
}

// Job builds the job of an exec: the one-shot Spec's validation and
// JobHeader, with the session's sandbox limits and the exec's own per-job
// ones checked against the Manager's Bounds.
func (s *Sandbox) Job(e ExecSpec) (Job, error) {
	env := maps.Clone(s.env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, e.Env)
	l := s.limits
	if e.TimeoutMS != 0 {
		l.TimeoutMS = e.TimeoutMS
	}
	if e.OutputBytes != 0 {
		l.OutputBytes = e.OutputBytes
	}
	if e.OutputCeilingBytes != 0 {
		l.OutputCeilingBytes = e.OutputCeilingBytes
	}
	spec := Spec{ID: s.id, Image: s.image, Argv: e.Argv, Env: env, Workdir: e.Workdir, Stdin: e.Stdin, Limits: l, OnOutput: e.OnOutput}
	// The one-shot path's own checks: argv, image, bounds, env names, job header.
	spec, err := s.m.Normalize(spec)
	if err != nil {
		return Job{}, err
	}
	return JobFromSpec(spec), nil
}

// Exec runs one command in the session. Several may run at once.
func (s *Sandbox) Exec(ctx context.Context, e ExecSpec) (Result, error) {
	job, err := s.Job(e)
	if err != nil {
		return failedExec(s, err), err
	}
	return s.RunJob(ctx, job)
}

// RunJob runs a job built by Job (a caller that wants the job checked before
// it answers, then runs it).
func (s *Sandbox) RunJob(ctx context.Context, job Job) (Result, error) {
	job, release := s.withEgress(job)
	defer release()
	return s.exec(ctx, job)
}

// proxyVariables name the exec's egress proxy for the tools that read one.
var proxyVariables = []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "npm_config_proxy", "npm_config_https_proxy"}

// withEgress gives a command of a session with egress a proxy port of its
// own (the lowest free one from EgressProxyPort up) and the variables
// naming it, unless the command set them itself.
func (s *Sandbox) withEgress(job Job) (Job, func()) {
	if s.egress == nil {
		return job, func() {}
	}
	s.mu.Lock()
	port := EgressProxyPort
	for s.proxyPorts[port] {
		port++
	}
	if s.proxyPorts == nil {
		s.proxyPorts = map[int]bool{}
	}
	s.proxyPorts[port] = true
	s.mu.Unlock()
	env := maps.Clone(job.Env)
	if env == nil {
		env = map[string]string{}
	}
	for _, k := range proxyVariables {
		if _, set := env[k]; !set {
			env[k] = "http://127.0.0.1:" + strconv.Itoa(port)
		}
	}
	job.Env, job.Egress, job.EgressPort = env, s.egress, port
	return job, func() {
		s.mu.Lock()
		delete(s.proxyPorts, port)
		s.mu.Unlock()
	}
}

func (s *Sandbox) exec(ctx context.Context, job Job) (Result, error) {
	if err := s.begin(); err != nil {
		return failedExec(s, err), err
	}
	defer s.finishExec()
	// The session's end ends its execs.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-s.done:
			cancel(fmt.Errorf("session ended (%s)", s.EndReason()))
		case <-ctx.Done():
		}
	}()
	t0 := s.m.clock()
	res, err := s.inst.Exec(ctx, job)
	res.ID = s.id
	res.Image = s.image
	res.ImageDigest = s.digest
	res.Runtime = s.m.opts.Runtime.Name()
	if res.Timings == nil {
		res.Timings = map[string]time.Duration{}
	}
	res.Timings["total"] = s.m.clock().Sub(t0)
	if so, ok := s.m.obs.(SessionObserver); ok {
		so.SessionExec(res.Status, res.Timings["total"])
	}
	return res, err
}

func failedExec(s *Sandbox, err error) Result {
	return Result{ID: s.id, Status: StatusError, ExitCode: -1, Error: err.Error(), Image: s.image, Runtime: s.m.opts.Runtime.Name()}
}

// filePath checks a path of the file API: relative to /work, no "..", not
// /work itself unless root is allowed; "/work/x" and "x" name the same file.
func filePath(p string, root bool) (string, error) {
	p = strings.TrimPrefix(p, "/work/")
	if p == "" || p == "." || p == "/work" {
		if root {
			return ".", nil
		}
		return "", Invalidf("path: name a file under /work")
	}
	clean, err := workspace.CleanName(p)
	if err != nil {
		return "", Invalidf("path %q: %v", p, err)
	}
	return clean, nil
}

// fileJob is a host-built job of the file API: run as the session's job
// user inside the sandbox, so a path can reach nothing the session's own
// commands could not (a symlink pointing out of /work resolves inside the
// sandbox, never on the host).
func (s *Sandbox) fileJob(argv []string, files map[string][]byte, outCap int64) Job {
	l := s.limits
	l.TimeoutMS = min(l.TimeoutMS, 30_000)
	l.OutputBytes = max(outCap, 1)
	l.OutputCeilingBytes = max(outCap, 1)
	return Job{Argv: argv, Workdir: "", Limits: l, Workspace: Workspace{Files: files}}
}

// PutFile writes data to path (relative to /work), creating its directories.
// An existing file is replaced. Sizes are capped by the session's /work size.
func (s *Sandbox) PutFile(ctx context.Context, path string, data []byte) error {
	name, err := filePath(path, false)
	if err != nil {
		return err
	}
	if int64(len(data)) > s.limits.WorkdirBytes {
		return fmt.Errorf("%w: file of %s is larger than the session's /work (%s)", ErrTooLarge, units.FormatBytes(int64(len(data))), units.FormatBytes(s.limits.WorkdirBytes))
	}
	// The workspace unpacker refuses to write through a link and to replace
	// what exists, so the old name is removed first, by the job user.
	if _, err := s.fileOp(ctx, s.fileJob([]string{"rm", "-rf", "--", "./" + name}, nil, 4096)); err != nil {
		return err
	}
	res, err := s.fileOp(ctx, s.fileJob([]string{"true"}, map[string][]byte{name: data}, 4096))
	if err != nil {
		return err
	}
	_ = res
	return nil
}

// fileOp runs a file job and turns a failed one into an error.
func (s *Sandbox) fileOp(ctx context.Context, job Job) (Result, error) {
	res, err := s.exec(ctx, job)
	if err != nil {
		return res, err
	}
	switch res.Status {
	case StatusOK:
		return res, nil
	case StatusOutputLimit:
		return res, fmt.Errorf("%w: the file is larger than %s", ErrTooLarge, units.FormatBytes(job.Limits.OutputCeilingBytes))
	case StatusExitNonzero:
		msg := strings.TrimSpace(string(res.Stderr.Data))
		if strings.Contains(msg, "No such file") {
			return res, fmt.Errorf("%w: %s", api.ErrNotFound, cutPrefix(msg))
		}
		return res, Invalidf("%s", cutPrefix(msg))
	}
	return res, fmt.Errorf("file operation ended %s: %s", res.Status, res.Error)
}

// cutPrefix drops the program name from a coreutils message.
func cutPrefix(msg string) string {
	if _, rest, ok := strings.Cut(msg, ": "); ok {
		return rest
	}
	return msg
}

// GetFile returns the bytes of the file at path. A file larger than the
// session's file cap is refused (ErrTooLarge).
func (s *Sandbox) GetFile(ctx context.Context, path string) ([]byte, error) {
	name, err := filePath(path, false)
	if err != nil {
		return nil, err
	}
	limit := min(s.m.opts.Sessions.withDefaults().MaxFileBytes, s.limits.WorkdirBytes)
	res, err := s.fileOp(ctx, s.fileJob([]string{"cat", "--", "./" + name}, nil, limit))
	if err != nil {
		return nil, err
	}
	return res.Stdout.Data, nil
}

// DeleteFile removes the file or directory at path (with what is under it).
func (s *Sandbox) DeleteFile(ctx context.Context, path string) error {
	name, err := filePath(path, false)
	if err != nil {
		return err
	}
	// find, not ls: coreutils' ls needs statx, which older gVisor lacks.
	if _, err := s.fileOp(ctx, s.fileJob([]string{"find", "./" + name, "-maxdepth", "0"}, nil, 4096)); err != nil {
		return err
	}
	_, err = s.fileOp(ctx, s.fileJob([]string{"rm", "-rf", "--", "./" + name}, nil, 4096))
	return err
}

// FileEntry is one entry of a directory listing.
type FileEntry struct {
	Name string `json:"name"`
	Type string `json:"type"` // "file", "dir", "symlink", "other"
	Size int64  `json:"size"`
	// ModTime is the entry's modification time.
	ModTime time.Time `json:"mtime"`
}

// maxListEntries bounds a listing.
const maxListEntries = 10000

// List returns the entries of the directory at path ("" or "." for /work).
func (s *Sandbox) List(ctx context.Context, path string) ([]FileEntry, error) {
	name, err := filePath(path, true)
	if err != nil {
		return nil, err
	}
	argv := []string{"find", "./" + name, "-mindepth", "1", "-maxdepth", "1", "-printf", `%y/%s/%T@/%f\0`}
	if name == "." {
		argv[1] = "."
	}
	res, err := s.fileOp(ctx, s.fileJob(argv, nil, 4<<20))
	if err != nil {
		return nil, err
	}
	return parseListing(res.Stdout.Data)
}

// parseListing reads find's output (untrusted: the sandbox wrote it).
func parseListing(b []byte) ([]FileEntry, error) {
	var out []FileEntry
	for rec := range strings.SplitSeq(string(b), "\x00") {
		if rec == "" {
			continue
		}
		if len(out) == maxListEntries {
			return out, fmt.Errorf("%w: more than %d entries", ErrTooLarge, maxListEntries)
		}
		parts := strings.SplitN(rec, "/", 4)
		if len(parts) != 4 {
			return nil, fmt.Errorf("%w: listing entry %q", ErrProtocol, rec)
		}
		size, err1 := strconv.ParseInt(parts[1], 10, 64)
		mt, err2 := strconv.ParseFloat(parts[2], 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%w: listing entry %q: %v", ErrProtocol, rec, err)
		}
		typ := map[string]string{"f": "file", "d": "dir", "l": "symlink"}[parts[0]]
		if typ == "" {
			typ = "other"
		}
		sec := int64(mt)
		out = append(out, FileEntry{Name: parts[3], Type: typ, Size: size, ModTime: time.Unix(sec, int64((mt-float64(sec))*1e9)).UTC()})
	}
	slices.SortFunc(out, func(a, b FileEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

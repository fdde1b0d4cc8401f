package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"
)

// PoolOptions configure the Manager's warm pool and how sandboxes are torn
// down. The zero value disables the pool and closes every sandbox before Run
// returns.
type PoolOptions struct {
	// Warm is how many sandboxes are kept created, started and waiting inside
	// aster-init for a job, per image of the allowlist, with the default
	// limits. 0 disables the pool. Warm sandboxes hold admission slots: they
	// count against MaxConcurrent.
	Warm int
	// MaxIdle is how long a warm sandbox may wait for a job; older ones are
	// destroyed and replaced, so the deadline label of every pooled sandbox
	// (created + MaxIdle + timeout + grace) stays true. Default 10m.
	MaxIdle time.Duration
	// ShrinkAfter is how long a pool may go without serving a request before it
	// shrinks to a single sandbox; the next request grows it back. Default 10m.
	ShrinkAfter time.Duration
	// RefillPerSecond bounds how many sandboxes per second one pool prepares,
	// so a drained pool does not starve the runs it exists to speed up.
	// Default 50.
	RefillPerSecond float64
	// RefillParallel bounds the prepares one pool has in flight. Default 2.
	RefillParallel int
	// BackgroundClose makes Run return as soon as the result is known and
	// destroy the sandbox afterwards in the background, still holding its
	// admission slot until it is gone. Close waits for those. Without it (for
	// one-shot commands such as aster exec) Run returns after the sandbox is
	// destroyed.
	BackgroundClose bool
}

// Defaults of the warm pool: what a zero PoolOptions field falls back to, and
// what the `pool:` section of aster.yaml starts from (config.DefaultPool*).
const (
	DefaultPoolMaxIdle     = 10 * time.Minute
	DefaultPoolShrinkAfter = 10 * time.Minute
	DefaultPoolRefillRate  = 50 // sandboxes per second per pool, at most
	poolRefillParallel     = 2  // not configurable
)

// poolRetryMax caps the back-off after failed prepares (engine down).
const poolRetryMax = 30 * time.Second

// PoolObserver is an optional extension of Observer for the warm pool: an
// Observer that also implements it receives these events.
type PoolObserver interface {
	// PoolReady reports the number of warm sandboxes of an image now.
	PoolReady(image string, n int)
	// PoolTake counts a request for a pooled image that got a warm sandbox
	// (hit) or had to go cold.
	PoolTake(image string, hit bool)
	// PoolDiscard counts warm sandboxes destroyed unused: "expired", "shrink",
	// "evicted" (a cold run needed the slot), "dead", "shutdown".
	PoolDiscard(image, reason string)
}

// PoolStats is a snapshot of one warm pool.
type PoolStats struct {
	Image     string
	Limits    Limits // the profile: what a request must match to be served warm
	Target    int    // sandboxes the pool aims to hold now
	Ready     int    // warm sandboxes waiting for a job
	Preparing int    // being prepared
	Hits      uint64 // requests served warm
	Misses    uint64 // requests for the image that went cold
	Discarded uint64 // warm sandboxes destroyed unused
}

// pool keeps warm sandboxes per (image, limits profile). A sandbox handed to a
// run is removed from the pool first, so it is never used twice.
type pool struct {
	m    *Manager
	opts PoolOptions
	obs  PoolObserver // nil when the Observer does not implement it
	log  *slog.Logger

	mu      sync.Mutex
	pools   []*warmPool
	stopped bool
	kick    chan struct{}
	stop    chan struct{}
	ctx     context.Context // prepares; cancelled at shutdown
	cancel  context.CancelFunc
	loopWG  sync.WaitGroup // the refill loop and the prepares it started
	closeWG sync.WaitGroup // background closes
}

type warmPool struct {
	image     string
	limits    Limits
	idle      []*warmEntry // oldest first
	preparing int
	lastTake  time.Time
	next      time.Time // earliest start of the next prepare (rate bound)
	failures  int       // consecutive failed prepares, for back-off
	hits      uint64
	misses    uint64
	discarded uint64
}

// warmEntry is one pooled sandbox. It holds an admission slot and the host
// tasks its limits are charged.
type warmEntry struct {
	inst    Instance
	image   string
	created time.Time
	tasks   int64
}

func newPool(m *Manager, opts PoolOptions) *pool {
	if opts.MaxIdle <= 0 {
		opts.MaxIdle = DefaultPoolMaxIdle
	}
	if opts.ShrinkAfter <= 0 {
		opts.ShrinkAfter = DefaultPoolShrinkAfter
	}
	if opts.RefillPerSecond <= 0 {
		opts.RefillPerSecond = DefaultPoolRefillRate
	}
	if opts.RefillParallel <= 0 {
		opts.RefillParallel = poolRefillParallel
	}
	p := &pool{m: m, opts: opts, log: m.log.With("component", "pool"), kick: make(chan struct{}, 1), stop: make(chan struct{})}
	p.obs, _ = m.obs.(PoolObserver)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if opts.Warm <= 0 {
		return p
	}
	now := m.clock()
	for _, img := range m.opts.Images {
		p.pools = append(p.pools, &warmPool{image: img, limits: m.opts.Defaults, lastTake: now})
	}
	p.loopWG.Add(1)
	go p.loop()
	return p
}

// matches says whether a normalised spec may run in a sandbox of this pool:
// same image and container shape, and a timeout no longer than the profile's
// (the sandbox's deadline label was computed from it). Output limits travel
// with the job and need not match.
func (wp *warmPool) matches(spec Spec) bool {
	a, b := spec.Limits, wp.limits
	return spec.Image == wp.image && a.MemoryBytes == b.MemoryBytes && a.MilliCPUs == b.MilliCPUs &&
		a.Pids == b.Pids && a.WorkdirBytes == b.WorkdirBytes && a.TmpBytes == b.TmpBytes &&
		a.TimeoutMS <= b.TimeoutMS
}

// take hands out a warm sandbox for spec, or nil. The sandbox's slot goes
// with it.
func (p *pool) take(spec Spec) *warmEntry {
	if len(p.pools) == 0 {
		return nil
	}
	now := p.m.clock()
	var got *warmEntry
	var dead []*warmEntry
	var pooled bool
	p.mu.Lock()
	for _, wp := range p.pools {
		if !wp.matches(spec) {
			continue
		}
		pooled = true
		wp.lastTake = now
		for len(wp.idle) > 0 && got == nil {
			e := wp.idle[0]
			wp.idle = wp.idle[1:]
			if now.Sub(e.created) >= p.opts.MaxIdle || isDone(e.inst) {
				wp.discarded++
				dead = append(dead, e)
				continue
			}
			got = e
		}
		if got != nil {
			wp.hits++
		} else {
			wp.misses++
		}
		p.ready(wp)
		break
	}
	p.mu.Unlock()
	for _, e := range dead {
		p.discard(e, "expired")
	}
	if pooled && p.obs != nil {
		p.obs.PoolTake(spec.Image, got != nil)
	}
	// After a hit the pool is refilled once the run has finished and freed
	// its slot (finish kicks the loop): preparing a replacement now would
	// compete for the CPU and the engine with the very run it serves.
	if pooled && (got == nil || len(dead) > 0) {
		p.kickRefill()
	}
	return got
}

// evict destroys the oldest idle warm sandboxes until they free what a run
// waiting for them lacks: slots sandboxes and tasks host tasks (or the pool
// is empty).
func (p *pool) evict(slots int, tasks int64) {
	var victims []*warmEntry
	p.mu.Lock()
	for slots > 0 || tasks > 0 {
		var victim *warmEntry
		var from *warmPool
		for _, wp := range p.pools {
			if len(wp.idle) > 0 && (victim == nil || wp.idle[0].created.Before(victim.created)) {
				victim, from = wp.idle[0], wp
			}
		}
		if victim == nil {
			break
		}
		from.idle = from.idle[1:]
		from.discarded++
		p.ready(from)
		victims = append(victims, victim)
		slots--
		tasks -= victim.tasks
	}
	p.mu.Unlock()
	for _, v := range victims {
		p.discard(v, "evicted")
	}
}

// discard destroys an unused warm sandbox in the background and frees its slot.
func (p *pool) discard(e *warmEntry, reason string) {
	if p.obs != nil {
		p.obs.PoolDiscard(e.image, reason)
	}
	p.closeWG.Add(1)
	go func() {
		defer p.closeWG.Done()
		if err := e.inst.Close(context.Background()); err != nil {
			p.log.Warn("destroy warm sandbox", "sandbox", e.inst.ID(), "reason", reason, "err", err)
		}
		p.m.track(e.inst.ID(), false)
		p.m.adm.release(e.tasks)
		p.kickRefill()
	}()
}

// ready reports a pool's size to the observer. Called with p.mu held.
func (p *pool) ready(wp *warmPool) {
	if p.obs != nil {
		p.obs.PoolReady(wp.image, len(wp.idle))
	}
}

func (p *pool) kickRefill() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// loop keeps every pool at its target: it replaces expired and dead sandboxes
// and prepares new ones within the rate bound, only ever with a free slot.
func (p *pool) loop() {
	defer p.loopWG.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-timer.C:
		}
		wake := p.fill()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wake)
	}
}

// fill does one round of upkeep and returns when to look again.
func (p *pool) fill() time.Duration {
	now := p.m.clock()
	wake := time.Second
	var stale []*warmEntry
	var reasons []string
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return time.Hour
	}
	for _, wp := range p.pools {
		target := p.target(wp, now)
		before := len(stale)
		keep := wp.idle[:0]
		for _, e := range wp.idle {
			switch {
			case now.Sub(e.created) >= p.opts.MaxIdle:
				stale, reasons = append(stale, e), append(reasons, "expired")
			case isDone(e.inst):
				stale, reasons = append(stale, e), append(reasons, "dead")
			default:
				keep = append(keep, e)
				wake = min(wake, e.created.Add(p.opts.MaxIdle).Sub(now))
			}
		}
		if until := wp.lastTake.Add(p.opts.ShrinkAfter).Sub(now); until > 0 {
			wake = min(wake, until)
		}
		wp.idle = keep
		// Newest first past the target: keep the oldest, which expire first.
		for len(wp.idle) > target {
			last := wp.idle[len(wp.idle)-1]
			wp.idle = wp.idle[:len(wp.idle)-1]
			stale, reasons = append(stale, last), append(reasons, "shrink")
		}
		wp.discarded += uint64(len(stale) - before)
		for len(wp.idle)+wp.preparing < target && wp.preparing < p.opts.RefillParallel {
			if now.Before(wp.next) {
				wake = min(wake, wp.next.Sub(now))
				break
			}
			if !p.m.adm.tryAcquire(p.m.hostTasks(wp.limits)) {
				break // every slot or the host task budget is taken, or runs are queued: they come first
			}
			wp.preparing++
			interval := time.Duration(float64(time.Second) / p.opts.RefillPerSecond)
			wp.next = now.Add(interval)
			p.loopWG.Add(1)
			go p.prepare(wp)
		}
		p.ready(wp)
	}
	p.mu.Unlock()
	for i, e := range stale {
		p.discard(e, reasons[i])
	}
	return wake
}

// target is how many warm sandboxes a pool should hold now.
func (p *pool) target(wp *warmPool, now time.Time) int {
	if now.Sub(wp.lastTake) >= p.opts.ShrinkAfter {
		return min(p.opts.Warm, 1)
	}
	return p.opts.Warm
}

// prepare makes one warm sandbox with the slot fill acquired for it.
func (p *pool) prepare(wp *warmPool) {
	defer p.loopWG.Done()
	created := p.m.clock()
	l := wp.limits
	tasks := p.m.hostTasks(l) // what fill charged it
	// A warm sandbox may serve a run with an export: its deadline leaves room.
	inst, err := p.m.opts.Runtime.Prepare(p.ctx, PrepareOptions{
		RunID:    newPoolID(),
		Image:    wp.image,
		Limits:   l,
		Deadline: created.Add(p.opts.MaxIdle + l.Timeout() + KillGrace + HostGrace + p.m.opts.PrepareAllowance + exportAllowance(true)),
	})
	p.mu.Lock()
	wp.preparing--
	if err != nil {
		wp.failures++
		backoff := min(time.Duration(1<<min(wp.failures, 5))*time.Second/2, poolRetryMax)
		wp.next = p.m.clock().Add(backoff)
		stopped := p.stopped
		p.mu.Unlock()
		p.m.adm.release(tasks)
		if !stopped {
			p.log.Warn("prepare warm sandbox", "image", wp.image, "err", err, "retry_in", backoff)
		}
		p.kickRefill()
		return
	}
	wp.failures = 0
	if p.stopped {
		p.mu.Unlock()
		p.m.track(inst.ID(), true)
		p.discard(&warmEntry{inst: inst, image: wp.image, created: created, tasks: tasks}, "shutdown")
		return
	}
	p.m.track(inst.ID(), true)
	wp.idle = append(wp.idle, &warmEntry{inst: inst, image: wp.image, created: created, tasks: tasks})
	p.ready(wp)
	p.mu.Unlock()
}

// shutdown stops refilling and destroys every idle warm sandbox. Safe to call
// more than once.
func (p *pool) shutdown() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	close(p.stop)
	p.cancel()
	var idle []*warmEntry
	for _, wp := range p.pools {
		idle = append(idle, wp.idle...)
		wp.discarded += uint64(len(wp.idle))
		wp.idle = nil
		p.ready(wp)
	}
	p.mu.Unlock()
	for _, e := range idle {
		p.discard(e, "shutdown")
	}
}

// wait blocks until the refill loop, its prepares and every background close
// have finished, or ctx ends.
func (p *pool) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		p.loopWG.Wait()
		p.closeWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (p *pool) stats() []PoolStats {
	now := p.m.clock()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PoolStats, 0, len(p.pools))
	for _, wp := range p.pools {
		target := p.target(wp, now)
		if p.stopped {
			target = 0
		}
		out = append(out, PoolStats{
			Image: wp.image, Limits: wp.limits, Target: target, Ready: len(wp.idle), Preparing: wp.preparing,
			Hits: wp.hits, Misses: wp.misses, Discarded: wp.discarded,
		})
	}
	return out
}

// isDone reports whether a sandbox is known to be gone already (its runtime
// says so through an optional Done method).
func isDone(inst Instance) bool {
	d, ok := inst.(interface{ Done() <-chan struct{} })
	if !ok {
		return false
	}
	select {
	case <-d.Done():
		return true
	default:
		return false
	}
}

// newPoolID names a warm sandbox before any run is known: "w-" and 12 hex digits.
func newPoolID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "w-" + hex.EncodeToString(b[:])
}

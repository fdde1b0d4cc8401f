package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// fakeRuntime prepares instances that succeed at once and records how many
// are alive, so tests can check the pool against MaxConcurrent.
type fakeRuntime struct {
	mu       sync.Mutex
	n        int
	live     int
	maxLive  int
	prepared []sandbox.PrepareOptions
	used     map[string]int // instance id -> runs
	closed   map[string]bool
	// closeGate, when set, blocks Close until it is closed.
	closeGate chan struct{}
	failing   atomic.Bool
}

func newFake() *fakeRuntime {
	return &fakeRuntime{used: map[string]int{}, closed: map[string]bool{}}
}

func (f *fakeRuntime) Name() string                         { return "fake" }
func (f *fakeRuntime) Check(context.Context) error          { return nil }
func (f *fakeRuntime) Remove(context.Context, string) error { return nil }
func (f *fakeRuntime) List(context.Context) ([]sandbox.Managed, error) {
	return nil, nil
}
func (f *fakeRuntime) ImageInfo(_ context.Context, image string) (sandbox.ImageInfo, error) {
	return sandbox.ImageInfo{Name: image, Digest: "sha256:fake"}, nil
}

func (f *fakeRuntime) Prepare(_ context.Context, opts sandbox.PrepareOptions) (sandbox.Instance, error) {
	if f.failing.Load() {
		return nil, errors.New("engine down")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.live++
	f.maxLive = max(f.maxLive, f.live)
	f.prepared = append(f.prepared, opts)
	return &fakeInstance{f: f, id: fmt.Sprintf("i%d", f.n), opts: opts, done: make(chan struct{})}, nil
}

func (f *fakeRuntime) snapshot() (live, maxLive, prepared int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live, f.maxLive, len(f.prepared)
}

type fakeInstance struct {
	f    *fakeRuntime
	id   string
	opts sandbox.PrepareOptions
	done chan struct{}
	once sync.Once
}

func (i *fakeInstance) ID() string            { return i.id }
func (i *fakeInstance) Done() <-chan struct{} { return i.done }
func (i *fakeInstance) die()                  { i.once.Do(func() { close(i.done) }) }
func (i *fakeInstance) Run(_ context.Context, job sandbox.Job) (sandbox.Result, error) {
	i.f.mu.Lock()
	i.f.used[i.id]++
	i.f.mu.Unlock()
	return sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Output{Data: []byte(i.id)}, Timings: map[string]time.Duration{}}, nil
}

func (i *fakeInstance) Close(context.Context) error {
	if g := i.f.closeGate; g != nil {
		<-g
	}
	i.f.mu.Lock()
	defer i.f.mu.Unlock()
	if !i.f.closed[i.id] {
		i.f.closed[i.id] = true
		i.f.live--
	}
	i.die()
	return nil
}

var poolLimits = sandbox.Limits{TimeoutMS: 5000, MemoryBytes: 64 << 20, MilliCPUs: 1000, Pids: 64,
	OutputBytes: 1 << 10, OutputCeilingBytes: 1 << 20, WorkdirBytes: 1 << 20, TmpBytes: 1 << 20}

func newPoolManager(t *testing.T, rt sandbox.Runtime, max int, po sandbox.PoolOptions, images ...string) *sandbox.Manager {
	t.Helper()
	if len(images) == 0 {
		images = []string{"img"}
	}
	m, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime: rt, Images: images, Defaults: poolLimits, Bounds: sandbox.LimitBounds(), MaxConcurrent: max, QueueSize: 16,
		QueueTimeout: 5 * time.Second, Pool: po,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close manager: %v", err)
		}
	})
	return m
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestPoolFillsAndServesWarmOnce(t *testing.T) {
	rt := newFake()
	m := newPoolManager(t, rt, 8, sandbox.PoolOptions{Warm: 3}, "img", "other")
	if err := m.WaitWarm(t.Context()); err != nil {
		t.Fatal(err)
	}
	stats := m.PoolStats()
	if len(stats) != 2 || stats[0].Ready != 3 || stats[1].Ready != 3 {
		t.Fatalf("pools %+v, want 3 ready for each image", stats)
	}
	if got := m.Stats().Running; got != 6 {
		t.Fatalf("warm sandboxes hold %d slots, want 6", got)
	}
	seen := map[string]bool{}
	for i := range 10 {
		res, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}, Image: "img"})
		if err != nil || res.Status != sandbox.StatusOK {
			t.Fatalf("run %d: %v %+v", i, err, res)
		}
		if _, warm := res.Timings["warm"]; !warm {
			t.Fatalf("run %d was not served warm: %v", i, res.Timings)
		}
		id := string(res.Stdout.Data)
		if seen[id] {
			t.Fatalf("sandbox %s served two runs", id)
		}
		seen[id] = true
		if err := m.WaitWarm(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	rt.mu.Lock()
	for id, n := range rt.used {
		if n != 1 || !rt.closed[id] {
			t.Errorf("sandbox %s ran %d jobs, closed=%v", id, n, rt.closed[id])
		}
	}
	rt.mu.Unlock()
	s := m.PoolStats()[0]
	if s.Hits != 10 || s.Misses != 0 {
		t.Fatalf("stats %+v, want 10 hits", s)
	}
}

func TestPoolProfileMatching(t *testing.T) {
	rt := newFake()
	m := newPoolManager(t, rt, 8, sandbox.PoolOptions{Warm: 1})
	cases := []struct {
		name   string
		limits sandbox.Limits
		warm   bool
	}{
		{"defaults", sandbox.Limits{}, true},
		{"shorter timeout", sandbox.Limits{TimeoutMS: 1000}, true},
		{"other output cap", sandbox.Limits{OutputBytes: 4 << 10}, true},
		{"longer timeout", sandbox.Limits{TimeoutMS: 60_000}, false},
		{"more memory", sandbox.Limits{MemoryBytes: 128 << 20}, false},
		{"fewer pids", sandbox.Limits{Pids: 32}, false},
	}
	for _, c := range cases {
		if err := m.WaitWarm(t.Context()); err != nil {
			t.Fatal(err)
		}
		res, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}, Limits: c.limits})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, warm := res.Timings["warm"]; warm != c.warm {
			t.Errorf("%s: warm=%v, want %v", c.name, warm, c.warm)
		}
	}
}

func TestPoolCountsAgainstMaxConcurrent(t *testing.T) {
	rt := newFake()
	m := newPoolManager(t, rt, 2, sandbox.PoolOptions{Warm: 2})
	if err := m.WaitWarm(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Cold runs (another profile) evict idle warm sandboxes rather than wait
	// behind them, and the live count never passes the limit.
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}, Limits: sandbox.Limits{MemoryBytes: 32 << 20}})
			if err != nil || res.Status != sandbox.StatusOK {
				t.Errorf("cold run: %v %+v", err, res)
			}
		}()
	}
	wg.Wait()
	if _, maxLive, _ := rt.snapshot(); maxLive > 2 {
		t.Fatalf("%d sandboxes alive at once with max-concurrent 2", maxLive)
	}
	// And the pool comes back when the burst is over.
	if err := m.WaitWarm(t.Context()); err != nil {
		t.Fatal(err)
	}
	if live, _, _ := rt.snapshot(); live != 2 {
		t.Fatalf("%d sandboxes alive after refill, want 2", live)
	}
}

func TestPoolDeadlineCoversIdleAndTimeout(t *testing.T) {
	rt := newFake()
	before := time.Now()
	m := newPoolManager(t, rt, 2, sandbox.PoolOptions{Warm: 1, MaxIdle: time.Minute})
	if err := m.WaitWarm(t.Context()); err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	opts := rt.prepared[0]
	rt.mu.Unlock()
	min := before.Add(time.Minute + poolLimits.Timeout() + sandbox.KillGrace + sandbox.HostGrace)
	if opts.Deadline.Before(min) {
		t.Fatalf("deadline %v is before created+idle+timeout+grace %v", opts.Deadline, min)
	}
	if opts.Limits != poolLimits {
		t.Fatalf("pool prepared limits %+v, want the defaults", opts.Limits)
	}
}

func TestPoolReplacesExpiredAndDeadSandboxes(t *testing.T) {
	rt := newFake()
	m := newPoolManager(t, rt, 4, sandbox.PoolOptions{Warm: 2, MaxIdle: 40 * time.Millisecond})
	eventually(t, "expired sandboxes replaced", func() bool {
		s := m.PoolStats()[0]
		return s.Discarded >= 4 && s.Ready == 2
	})
	if _, maxLive, _ := rt.snapshot(); maxLive > 4 {
		t.Fatalf("%d alive with max 4", maxLive)
	}

}

func TestPoolSkipsDeadSandbox(t *testing.T) {
	rt := &dyingRuntime{fakeRuntime: newFake()}
	m := newPoolManager(t, rt, 4, sandbox.PoolOptions{Warm: 1})
	if err := m.WaitWarm(t.Context()); err != nil {
		t.Fatal(err)
	}
	rt.lastInst().die()
	res, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("%v %+v", err, res)
	}
	if _, warm := res.Timings["warm"]; warm {
		t.Fatal("a dead warm sandbox was handed out")
	}
}

type dyingRuntime struct {
	*fakeRuntime
	mu   sync.Mutex
	last *fakeInstance
}

func (d *dyingRuntime) Prepare(ctx context.Context, opts sandbox.PrepareOptions) (sandbox.Instance, error) {
	inst, err := d.fakeRuntime.Prepare(ctx, opts)
	if err == nil {
		d.mu.Lock()
		d.last = inst.(*fakeInstance)
		d.mu.Unlock()
	}
	return inst, err
}

func (d *dyingRuntime) lastInst() *fakeInstance {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

func TestPoolShrinksWhenIdle(t *testing.T) {
	rt := newFake()
	m := newPoolManager(t, rt, 8, sandbox.PoolOptions{Warm: 4, ShrinkAfter: 300 * time.Millisecond, RefillPerSecond: 1000, RefillParallel: 4})
	eventually(t, "pool shrunk to one", func() bool {
		s := m.PoolStats()[0]
		live, _, _ := rt.snapshot()
		return s.Target == 1 && s.Ready == 1 && live == 1
	})
	// A request grows it back.
	if _, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pool grown back", func() bool { return m.PoolStats()[0].Ready == 4 })
}

func TestPoolRefillRateIsBounded(t *testing.T) {
	rt := newFake()
	m := newPoolManager(t, rt, 64, sandbox.PoolOptions{Warm: 50, RefillPerSecond: 20, RefillParallel: 4})
	time.Sleep(250 * time.Millisecond)
	_, _, prepared := rt.snapshot()
	// 250 ms at 20/s is 5 starts, plus the first one at once.
	if prepared > 8 {
		t.Fatalf("%d prepares in 250ms at 20/s", prepared)
	}
	_ = m
}

func TestPoolBacksOffWhenPrepareFails(t *testing.T) {
	rt := newFake()
	rt.failing.Store(true)
	m := newPoolManager(t, rt, 4, sandbox.PoolOptions{Warm: 2})
	time.Sleep(100 * time.Millisecond)
	if got := m.Stats().Running; got != 0 {
		t.Fatalf("failed prepares hold %d slots", got)
	}
	rt.failing.Store(false)
	// Cold runs still work while the pool backs off.
	if _, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}, Limits: sandbox.Limits{Pids: 32}}); err != nil {
		t.Fatal(err)
	}
}

func TestBackgroundCloseHoldsSlotUntilGone(t *testing.T) {
	rt := newFake()
	gate := make(chan struct{})
	rt.closeGate = gate
	m := newPoolManager(t, rt, 1, sandbox.PoolOptions{BackgroundClose: true})
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}})
		if err != nil || res.Status != sandbox.StatusOK {
			t.Errorf("%v %+v", err, res)
		}
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run waited for the sandbox to be destroyed")
	}
	if got := m.Stats().Running; got != 1 {
		t.Fatalf("slot released before the sandbox was destroyed: running=%d", got)
	}
	close(gate)
	eventually(t, "slot released", func() bool { return m.Stats().Running == 0 })
}

func TestCloseDestroysWarmSandboxes(t *testing.T) {
	rt := newFake()
	m, err := sandbox.NewManager(sandbox.ManagerOptions{Runtime: rt, Images: []string{"img"}, Defaults: poolLimits, Bounds: sandbox.LimitBounds(), MaxConcurrent: 4, Pool: sandbox.PoolOptions{Warm: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WaitWarm(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if live, _, _ := rt.snapshot(); live != 0 {
		t.Fatalf("%d sandboxes alive after Close", live)
	}
	if got := m.Stats().Running; got != 0 {
		t.Fatalf("running=%d after Close", got)
	}
	if _, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("run after Close: %v, want ErrUnavailable", err)
	}
}

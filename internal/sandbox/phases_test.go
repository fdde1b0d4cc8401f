package sandbox_test

import (
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// phaseRecorder is an Observer that keeps the phases it is told about.
type phaseRecorder struct {
	mu     sync.Mutex
	phases []map[string]time.Duration
	rt     []string
	// teardowns are the removals after the answer (BackgroundClose).
	teardowns []time.Duration
}

func (p *phaseRecorder) RunStarted()                               {}
func (p *phaseRecorder) RunFinished(sandbox.Status, time.Duration) {}
func (p *phaseRecorder) Rejected(string)                           {}
func (p *phaseRecorder) QueueDepth(int)                            {}
func (p *phaseRecorder) Running(int)                               {}
func (p *phaseRecorder) RunTeardown(runtime string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.teardowns = append(p.teardowns, d)
}
func (p *phaseRecorder) RunPhases(runtime string, t map[string]time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rt = append(p.rt, runtime)
	p.phases = append(p.phases, t)
}

// Every run that got a slot tells a PhaseObserver where its time went, the wait for
// the slot (queue) included, and the result carries the same phases.
func TestRunPhasesObserved(t *testing.T) {
	obs := &phaseRecorder{}
	m, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime: newFake(), Images: []string{"img"}, Defaults: poolLimits, Bounds: sandbox.LimitBounds(), MaxConcurrent: 2, QueueSize: 4,
		QueueTimeout: 5 * time.Second, Observer: obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(t.Context())
	res, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"admission", "queue", "prepare", "remove", "total"} {
		if _, ok := res.Timings[phase]; !ok {
			t.Errorf("the result has no %s timing: %v", phase, res.Timings)
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.phases) != 1 || obs.rt[0] != "fake" {
		t.Fatalf("observed %d runs (%v), want 1 on fake", len(obs.phases), obs.rt)
	}
	for phase, d := range res.Timings {
		if obs.phases[0][phase] != d {
			t.Errorf("observed %s = %v, the result says %v", phase, obs.phases[0][phase], d)
		}
	}
}

// A removal after the answer (BackgroundClose) is in no Result: the observer is told
// of it once it is done, and the result has no remove phase. Admission starts when
// the caller says the request arrived.
func TestBackgroundTeardownObserved(t *testing.T) {
	obs := &phaseRecorder{}
	m, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime: newFake(), Images: []string{"img"}, Defaults: poolLimits, Bounds: sandbox.LimitBounds(), MaxConcurrent: 2, QueueSize: 4,
		QueueTimeout: 5 * time.Second, Observer: obs, Pool: sandbox.PoolOptions{BackgroundClose: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	received := time.Now().Add(-time.Second)
	res, err := m.RunWithOptions(t.Context(), sandbox.Spec{Argv: []string{"true"}}, sandbox.RunOptions{Received: received})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Timings["remove"]; ok {
		t.Errorf("a removal after the answer is in the result: %v", res.Timings)
	}
	if a := res.Timings["admission"]; a < time.Second {
		t.Errorf("admission %v, want at least the second since the request arrived", a)
	}
	if err := m.Close(t.Context()); err != nil { // waits for the background removal
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.teardowns) != 1 {
		t.Fatalf("%d teardowns observed, want 1", len(obs.teardowns))
	}
}

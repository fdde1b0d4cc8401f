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
}

func (p *phaseRecorder) RunStarted()                               {}
func (p *phaseRecorder) RunFinished(sandbox.Status, time.Duration) {}
func (p *phaseRecorder) Rejected(string)                           {}
func (p *phaseRecorder) QueueDepth(int)                            {}
func (p *phaseRecorder) Running(int)                               {}
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
	for _, phase := range []string{"queue", "prepare", "total"} {
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

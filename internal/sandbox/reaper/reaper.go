// Package reaper removes sandboxes that outlived their deadline: containers (or
// pods) left behind when Aster was killed, the engine restarted mid-run, or
// aster-init wedged. It selects by the labels every sandbox carries, so it needs
// no memory of what was started: a fresh process cleans up after a dead one.
package reaper

import (
	"context"
	"log/slog"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// Defaults of a Reaper (the `reaper:` section of aster.yaml, --reaper-grace and
// --reaper-period, start from them).
const (
	// DefaultGrace is how long past its deadline label a sandbox is left alone.
	DefaultGrace = 30 * time.Second
	// DefaultPeriod is how often a long-running command reaps.
	DefaultPeriod = time.Minute
	// DefaultAllowance is added to a deadline label for a sandbox's creation
	// and teardown (reaper.allowance; sandbox.ManagerOptions.PrepareAllowance).
	DefaultAllowance = 2 * time.Minute
	// DefaultCallTimeout bounds each engine call of the loop.
	DefaultCallTimeout = 30 * time.Second
)

// Options configure a Reaper. Dependencies are plain functions so the reaper is
// testable without an engine.
type Options struct {
	List   func(ctx context.Context) ([]sandbox.Managed, error)
	Remove func(ctx context.Context, id string) error
	// Grace is added to each deadline (zero is allowed: reap right at the
	// deadline; ForRuntime sets DefaultGrace); Period is the loop interval; CallTimeout
	// bounds each engine call so a hung engine cannot wedge the loop.
	Grace       time.Duration
	Period      time.Duration
	CallTimeout time.Duration
	// Skip, when set, spares sandboxes the caller knows are in use.
	Skip   func(id string) bool
	Now    func() time.Time
	Logger *slog.Logger
}

// Reaper finds and removes expired sandboxes.
type Reaper struct{ o Options }

// New returns a Reaper; zero options get defaults.
func New(o Options) *Reaper {
	if o.Grace < 0 {
		o.Grace = 0
	}
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Reaper{o: o}
}

// ForRuntime returns options wired to a runtime's List and Remove.
func ForRuntime(rt sandbox.Runtime) Options {
	return Options{List: rt.List, Remove: rt.Remove, Grace: DefaultGrace}
}

// Action is what the reaper did (or, in a dry run, would do) to one sandbox.
type Action struct {
	Sandbox sandbox.Managed
	// Expired says the deadline plus grace has passed; only those are removed.
	Expired bool
	Removed bool
	Err     error
}

// Once lists every managed sandbox and removes the expired ones (none in a dry
// run). It returns one Action per managed sandbox, expired or not.
func (r *Reaper) Once(ctx context.Context, dryRun bool) ([]Action, error) {
	lctx, cancel := context.WithTimeout(ctx, r.o.CallTimeout)
	items, err := r.o.List(lctx)
	cancel()
	if err != nil {
		return nil, err
	}
	now := r.o.Now()
	actions := make([]Action, 0, len(items))
	for _, m := range items {
		a := Action{Sandbox: m}
		// A sandbox without a readable deadline is older than any run can be
		// once it is a day old.
		deadline := m.Deadline
		if deadline.IsZero() {
			deadline = m.Created.Add(24 * time.Hour)
		}
		a.Expired = now.After(deadline.Add(r.o.Grace))
		if a.Expired && !dryRun && (r.o.Skip == nil || !r.o.Skip(m.ID)) {
			rctx, cancel := context.WithTimeout(ctx, r.o.CallTimeout)
			a.Err = r.o.Remove(rctx, m.ID)
			cancel()
			a.Removed = a.Err == nil
			if a.Err != nil {
				r.o.Logger.Warn("reap sandbox", "sandbox", m.ID, "run", m.RunID, "err", a.Err)
			} else {
				r.o.Logger.Info("reaped sandbox past its deadline", "sandbox", m.ID, "run", m.RunID, "deadline", m.Deadline)
			}
		}
		actions = append(actions, a)
	}
	return actions, nil
}

// Loop reaps at once and then every Period until ctx ends.
func (r *Reaper) Loop(ctx context.Context) {
	for {
		if _, err := r.Once(ctx, false); err != nil && ctx.Err() == nil {
			r.o.Logger.Warn("reaper pass", "err", err)
		}
		t := time.NewTimer(r.o.Period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

package runtimekit

import (
	"context"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/cgroupstat"
	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
)

// InstanceState is what every runtime's Instance keeps the same way: the
// durations of its phases (create, start, init, job, remove; they become
// Result.Timings), the guard that lets it run one job and the one that lets
// it be removed once. A runtime embeds
// it; the zero value is ready, and it is safe for concurrent use.
type InstanceState struct {
	mu      sync.Mutex
	timings map[string]time.Duration
	ran     bool

	closeOnce sync.Once
	closeErr  error
}

// SetTiming records how long the phase name took.
func (s *InstanceState) SetTiming(name string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timings == nil {
		s.timings = map[string]time.Duration{}
	}
	s.timings[name] = d
}

// Timings returns a copy of the durations recorded so far.
func (s *InstanceState) Timings() map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.timings)
}

// CloseOnce implements the once of Instance.Close: remove runs on the first
// call only, its duration is recorded as the "remove" timing, and its error
// is what every call returns.
func (s *InstanceState) CloseOnce(remove func() error) error {
	s.closeOnce.Do(func() {
		t0 := time.Now()
		s.closeErr = remove()
		s.SetTiming("remove", time.Since(t0))
	})
	return s.closeErr
}

// RunParts is what a runtime brings to InstanceState.RunOnce: its name and
// the sandbox's, the streams of its aster-init (already past hello) and how
// to end it, and what it adds to the Result.
type RunParts struct {
	// ID and Runtime fill Result.ID and Result.Runtime.
	ID, Runtime string
	// W, R, Destroy, Exited and HostOOM are the Session's fields of the
	// same names.
	W       io.Writer
	R       *initproto.Reader
	Destroy func()
	Exited  <-chan struct{}
	HostOOM func(ended bool) (kills int64, ok bool)
	// After, when set, may change the result once the session has returned
	// and the job's duration is recorded: what the runtime knows better than
	// init (how the sandbox ended, the host's CPU count).
	After func(res sandbox.Result, err error) (sandbox.Result, error)
	// Diagnostics, when set, returns what the sandbox's own log adds to the
	// Error of a StatusError result (" (…)", or "" when there is nothing).
	Diagnostics func() string
}

// RunOnce implements Instance.Run for a runtime: the second call returns
// ErrUsed; the first drives job through a Session over p's streams and
// returns its Result with the runtime's ID, name, timings and diagnostics.
func (s *InstanceState) RunOnce(ctx context.Context, job sandbox.Job, p RunParts) (sandbox.Result, error) {
	s.mu.Lock()
	used := s.ran
	s.ran = true
	s.mu.Unlock()
	if used {
		return UsedResult(), ErrUsed
	}
	sess := &Session{
		W:         p.W,
		R:         p.R,
		Destroy:   p.Destroy,
		Exited:    p.Exited,
		HelloSeen: true,
		HostOOM:   p.HostOOM,
	}
	t0 := time.Now()
	res, err := sess.Run(ctx, job)
	s.SetTiming("job", time.Since(t0))
	if p.After != nil {
		res, err = p.After(res, err)
	}
	res.ID = p.ID
	res.Runtime = p.Runtime
	res.Timings = s.Timings()
	if p.Diagnostics != nil && res.Status == sandbox.StatusError && res.Error != "" {
		res.Error += p.Diagnostics()
	}
	return res, err
}

// CgroupHostOOM is Session.HostOOM for a sandbox whose memory cgroup the host
// can read at dir ("" when it cannot): the cgroup's own count while the
// sandbox exists; once it is gone (exited is closed), whether init was
// SIGKILLed by someone other than the host (initKilled) — only the kernel's
// OOM killer can: the job cannot signal init (another uid, and PID 1 of its
// namespace).
func CgroupHostOOM(dir string, exited <-chan struct{}, initKilled func() bool) (int64, bool) {
	if dir != "" {
		if n, ok := cgroupstat.OOMKills(dir); ok {
			return n, true
		}
	}
	select {
	case <-exited:
	default:
		return 0, false
	}
	if initKilled() {
		return 1, true
	}
	return 0, false
}

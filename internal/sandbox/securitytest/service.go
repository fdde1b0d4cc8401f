package securitytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// G2 at the runtime itself: a zero or negative limit that shapes the sandbox
// is refused by Prepare with ErrInvalidSpec before anything is created, even
// when no Manager checked it first (an engine may read a zero as unlimited).
func (s *suite) g2ZeroLimits(t *testing.T) {
	cases := []struct {
		name string
		set  func(*sandbox.Limits, int64)
	}{
		{"memory", func(l *sandbox.Limits, v int64) { l.MemoryBytes = v }},
		{"pids", func(l *sandbox.Limits, v int64) { l.Pids = v }},
		{"cpus", func(l *sandbox.Limits, v int64) { l.MilliCPUs = v }},
		{"timeout", func(l *sandbox.Limits, v int64) { l.TimeoutMS = v }},
		{"workdir-size", func(l *sandbox.Limits, v int64) { l.WorkdirBytes = v }},
		{"tmp-size", func(l *sandbox.Limits, v int64) { l.TmpBytes = v }},
	}
	for _, c := range cases {
		for _, v := range []int64{0, -1} {
			l := sandbox.DefaultLimits()
			c.set(&l, v)
			runID := sandbox.NewRunID()
			inst, err := s.tgt.Runtime.Prepare(t.Context(), sandbox.PrepareOptions{
				RunID: runID, Image: s.tgt.Image, Limits: l, Deadline: time.Now().Add(time.Minute),
			})
			if err == nil {
				inst.Close(context.WithoutCancel(t.Context()))
				t.Errorf("%s %d: a sandbox was prepared", c.name, v)
			} else if !errors.Is(err, sandbox.ErrInvalidSpec) {
				t.Errorf("%s %d: %v, want ErrInvalidSpec", c.name, v, err)
			}
			// Nothing of the refused run is on the runtime.
			ids, err := s.tgt.Live(t.Context(), runID)
			if err != nil || len(ids) != 0 {
				t.Errorf("%s %d: sandboxes of the refused run: %v %v", c.name, v, ids, err)
			}
		}
	}
}

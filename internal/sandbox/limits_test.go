package sandbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

// TestManagerNeedsBounds: a Manager cannot be built without limit bounds, with
// bounds that admit a zero or nothing at all, or with defaults outside them.
func TestManagerNeedsBounds(t *testing.T) {
	noMinMemory := sandbox.LimitBounds()
	noMinMemory.Min.MemoryBytes = 0
	inverted := sandbox.LimitBounds()
	inverted.Max.Pids = inverted.Min.Pids - 1
	zeroDefault := poolLimits
	zeroDefault.MemoryBytes = 0
	tooBig := poolLimits
	tooBig.MilliCPUs = sandbox.MaxMilliCPUs + 1
	for _, c := range []struct {
		name     string
		bounds   sandbox.Bounds
		defaults sandbox.Limits
		want     string
	}{
		{"no bounds", sandbox.Bounds{}, poolLimits, "limit bounds"},
		{"zero minimum", noMinMemory, poolLimits, "memory: minimum 0 is not positive"},
		{"inverted", inverted, poolLimits, "pids: maximum"},
		{"no defaults", sandbox.LimitBounds(), sandbox.Limits{}, "default limits"},
		{"zero default", sandbox.LimitBounds(), zeroDefault, "memory 0B is out of range"},
		{"default past the maximum", sandbox.LimitBounds(), tooBig, "cpus 64.001 is out of range"},
	} {
		m, err := sandbox.NewManager(sandbox.ManagerOptions{Runtime: newFake(), Images: []string{"img"}, Defaults: c.defaults, Bounds: c.bounds})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: manager %v, error %v; want one containing %q", c.name, m != nil, err, c.want)
		}
	}
}

// TestNormalizeChecksEveryLimit: whatever a request asks, a limit outside the
// bounds is refused with ErrInvalidSpec and nothing is prepared.
func TestNormalizeChecksEveryLimit(t *testing.T) {
	rt := newFake()
	m := newPoolManager(t, rt, 1, sandbox.PoolOptions{})
	for _, c := range []struct {
		limits sandbox.Limits
		want   string
	}{
		{sandbox.Limits{MemoryBytes: -1}, "limits.memory -1B is out of range (16MiB to 64GiB)"},
		{sandbox.Limits{Pids: -5}, "pids -5 is out of range"},
		{sandbox.Limits{MilliCPUs: -1000}, "cpus -1 is out of range"},
		{sandbox.Limits{TimeoutMS: -1}, "timeout -1ms is out of range"},
		{sandbox.Limits{WorkdirBytes: -1}, "limits.workdir_size -1B is out of range"},
		{sandbox.Limits{TmpBytes: sandbox.MaxTmpfsBytes + 1}, "limits.tmp_size 16.0GiB (17179869185B) is out of range (1MiB to 16GiB)"},
		{sandbox.Limits{OutputBytes: 4 << 20}, "limits.output_ceiling 1MiB is below limits.output_limit 4MiB"},
	} {
		res, err := m.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}, Limits: c.limits})
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), c.want) || res.Status != sandbox.StatusError {
			t.Errorf("%+v: %v (%s); want ErrInvalidSpec %q", c.limits, err, res.Status, c.want)
		}
	}
	if _, _, prepared := rt.snapshot(); prepared != 0 {
		t.Errorf("%d sandboxes prepared for refused runs", prepared)
	}
}

// TestPrepareOptionsValidate is the check each runtime makes first in
// Prepare: every limit that shapes a sandbox must be positive; the output
// caps, enforced per job on the host, are not its concern.
func TestPrepareOptionsValidate(t *testing.T) {
	if err := (sandbox.PrepareOptions{Limits: poolLimits}).Validate(); err != nil {
		t.Fatalf("valid limits refused: %v", err)
	}
	perJob := poolLimits
	perJob.OutputBytes, perJob.OutputCeilingBytes = 0, 0
	if err := (sandbox.PrepareOptions{Limits: perJob}).Validate(); err != nil {
		t.Errorf("output caps are per job: %v", err)
	}
	for name, set := range map[string]func(*sandbox.Limits){
		"timeout":      func(l *sandbox.Limits) { l.TimeoutMS = 0 },
		"memory":       func(l *sandbox.Limits) { l.MemoryBytes = 0 },
		"cpus":         func(l *sandbox.Limits) { l.MilliCPUs = -1 },
		"pids":         func(l *sandbox.Limits) { l.Pids = 0 },
		"workdir_size": func(l *sandbox.Limits) { l.WorkdirBytes = 0 },
		"tmp_size":     func(l *sandbox.Limits) { l.TmpBytes = -1 },
	} {
		l := poolLimits
		set(&l)
		err := sandbox.PrepareOptions{Limits: l}.Validate()
		if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), name+" ") {
			t.Errorf("%s: %v, want ErrInvalidSpec naming it", name, err)
		}
	}
}

package runtimekit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// TestRunOnce drives a job through the real aster-init with the part of
// Instance.Run every runtime shares: one job only, the runtime's names and
// timings on the Result, its After hook once, and its diagnostics only on an
// error result.
func TestRunOnce(t *testing.T) {
	s, _ := startInit(t)
	if err := runtimekit.AwaitHello(t.Context(), s.R, 30*time.Second, func() string { return "" }); err != nil {
		t.Fatal(err)
	}
	var st runtimekit.InstanceState
	st.SetTiming("create", time.Millisecond)
	afters := 0
	parts := runtimekit.RunParts{
		ID: "run-1", Runtime: "plain", W: s.W, R: s.R, Destroy: s.Destroy,
		After: func(res sandbox.Result, err error) (sandbox.Result, error) {
			afters++
			res.CPUTime = 7 * time.Second
			return res, err
		},
		Diagnostics: func() string { return " (init log)" },
	}
	res, err := st.RunOnce(t.Context(), job("sh", "-c", "echo hi"), parts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK || string(res.Stdout.Data) != "hi\n" || res.Error != "" {
		t.Fatalf("run: %+v", res)
	}
	if res.ID != "run-1" || res.Runtime != "plain" || res.CPUTime != 7*time.Second || afters != 1 {
		t.Fatalf("runtime's parts not applied: id %q runtime %q cpu %s afters %d", res.ID, res.Runtime, res.CPUTime, afters)
	}
	if _, ok := res.Timings["job"]; !ok || res.Timings["create"] != time.Millisecond {
		t.Fatalf("timings %v, want create and job", res.Timings)
	}
	st.SetTiming("remove", time.Second)
	if _, ok := res.Timings["remove"]; ok {
		t.Fatal("the Result's timings alias the instance's")
	}

	res, err = st.RunOnce(t.Context(), job("true"), parts)
	if !errors.Is(err, runtimekit.ErrUsed) || res.Status != sandbox.StatusError || afters != 1 {
		t.Fatalf("second run: %v, %+v, afters %d", err, res, afters)
	}

	// An error result carries the runtime's diagnostics.
	var fresh runtimekit.InstanceState
	bad := job("true")
	bad.Workdir = "/work/../etc"
	res, err = fresh.RunOnce(t.Context(), bad, parts)
	if err == nil || res.Status != sandbox.StatusError || res.Error != err.Error()+" (init log)" {
		t.Fatalf("invalid job: %v, %q", err, res.Error)
	}
}

// TestCloseOnce: the removal runs once, every Close returns its error, and
// its duration is the "remove" timing.
func TestCloseOnce(t *testing.T) {
	var st runtimekit.InstanceState
	calls := 0
	gone := errors.New("engine gone")
	remove := func() error { calls++; return gone }
	for range 3 {
		if err := st.CloseOnce(remove); !errors.Is(err, gone) {
			t.Fatalf("close: %v, want %v", err, gone)
		}
	}
	if calls != 1 {
		t.Fatalf("removed %d times, want once", calls)
	}
	if _, ok := st.Timings()["remove"]; !ok {
		t.Fatalf("timings %v, want remove", st.Timings())
	}
}

package app

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/docker"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/store"
)

// engineOutage runs every sandbox on down (a real runtime whose engine cannot be
// reached) until restore, then on up (the real engine): an engine restart in the
// middle of a burst of reviews.
type engineOutage struct {
	down, up gate.Sandbox
	back     atomic.Bool
	refused  atomic.Int32
}

func (o *engineOutage) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	if o.back.Load() {
		return o.up.Run(ctx, spec)
	}
	res, err := o.down.Run(ctx, spec)
	o.refused.Add(1)
	return res, err
}

// outageGate is the gate over engineOutage: the test's Docker engine behind a
// Docker runtime pointed at a socket nothing listens on.
func outageGate(t *testing.T) (*gate.Runner, *engineOutage) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a Docker engine")
	}
	up := sandboxtest.Manager(t, sandboxtest.Docker(t), 4)
	rt, err := docker.New(docker.Options{Host: "unix://" + filepath.Join(t.TempDir(), "no-engine.sock"), InitPath: sandboxtest.InitBinary(t),
		Labels: map[string]string{"aster.test": sandboxtest.Label(t)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	o := &engineOutage{down: sandboxtest.Manager(t, rt, 4), up: up}
	return gate.NewRunner(o, gate.RunnerOptions{Image: sandboxtest.Image(), Limits: config.DefaultLimits(), Parallel: 4}), o
}

// waitRetried waits until an attempt failed and was put back for a retry, failing
// the test if the check run completes meanwhile (the engine still unreachable).
func waitRetried(t *testing.T, h *harness) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(h.logs.String(), "review attempt failed; it is retried") {
		if time.Now().After(deadline) {
			t.Fatal("no attempt failed while the engine was unreachable")
		}
		if runs := h.fake.CheckRuns("acme", "widgets"); len(runs) > 0 && runs[0].Status == "completed" {
			t.Fatalf("the check run completed while the engine was unreachable: %s %q: %s", runs[0].Conclusion, runs[0].Title, runs[0].Summary)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An engine the sandboxes cannot reach is not a finished review: the attempt is retried
// and, the engine back, the pull request gets a complete review (success), one check run,
// never a neutral "could not finish" in between.
func TestEngineOutageRetriesTheReview(t *testing.T) {
	forEachDB(t, testEngineOutageRetriesTheReview)
}

func testEngineOutageRetriesTheReview(t *testing.T, dbURL string) {
	runner, outage := outageGate(t)
	rv := NewPipelineReviewer(PipelineOptions{Gate: runner, TempDir: t.TempDir()})
	h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL, queue: store.QueueOptions{MaxAttempts: 8, RetryBase: 300 * time.Millisecond, RetryMax: time.Second}})
	base := h.git.Commit("", "base", map[string]string{"app.py": "def f(x):\n    return x\n"})
	head := h.git.Commit(base, "change", map[string]string{"app.py": "def f(x):\n    return x + 1\n"})
	h.push("outage-1", "opened", 3, base, head, "")
	waitRetried(t, h)
	outage.back.Store(true)
	if outage.refused.Load() == 0 {
		t.Fatal("no analyzer met the unreachable engine")
	}
	recs := h.waitHistory(3, 1, 4*time.Minute)
	if r := recs[0]; r.Attempt < 2 || r.Conclusion != ConclusionSuccess {
		t.Fatalf("record %+v: want a successful review after a retry", r)
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "success" {
		t.Fatalf("check runs %+v: want one, completed, success", runs)
	}
	if !strings.Contains(runs[0].Text, "| bandit | ") || strings.Contains(runs[0].Text, "| error |") {
		t.Errorf("the analyzers did not all run on the engine once it was back:\n%s", runs[0].Text)
	}
}

// When the engine stays unreachable through the last attempt, the review is posted as
// what it is: neutral, and the summary says the sandbox could not run the analyzers.
func TestEngineOutageLastAttemptSaysSo(t *testing.T) {
	forEachDB(t, testEngineOutageLastAttemptSaysSo)
}

func testEngineOutageLastAttemptSaysSo(t *testing.T, dbURL string) {
	runner, _ := outageGate(t)
	rv := NewPipelineReviewer(PipelineOptions{Gate: runner, TempDir: t.TempDir()})
	h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL, queue: store.QueueOptions{MaxAttempts: 2, RetryBase: 100 * time.Millisecond, RetryMax: 200 * time.Millisecond}})
	base := h.git.Commit("", "base", map[string]string{"app.py": "def f(x):\n    return x\n"})
	head := h.git.Commit(base, "change", map[string]string{"app.py": "def f(x):\n    return x + 1\n"})
	h.push("outage-2", "opened", 4, base, head, "")
	recs := h.waitHistory(4, 1, 2*time.Minute)
	if r := recs[0]; r.Attempt != 2 || r.Conclusion != ConclusionNeutral {
		t.Fatalf("record %+v: want a neutral review on the second and last attempt", r)
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Conclusion != "neutral" {
		t.Fatalf("check runs %+v: want one, neutral", runs)
	}
	if text := runs[0].Summary + runs[0].Text; !strings.Contains(text, "unavailable") {
		t.Errorf("the check run does not say the sandbox was unavailable:\n%s", text)
	}
}

// The tests are retried as the analyzers are: a test step the unreachable engine could
// not run is not a finished review (its status would be "error", the check run neutral).
func TestEngineOutageRetriesTheTests(t *testing.T) {
	forEachDB(t, testEngineOutageRetriesTheTests)
}

func testEngineOutageRetriesTheTests(t *testing.T, dbURL string) {
	_, outage := outageGate(t)
	tests := &review.SandboxTests{Sandbox: outage, Image: sandboxtest.Image(), Limits: config.DefaultLimits(), TempDir: t.TempDir()}
	rv := NewPipelineReviewer(PipelineOptions{Tests: tests, TempDir: t.TempDir()})
	h := newHarness(t, harnessOptions{reviewer: rv, dbURL: dbURL, queue: store.QueueOptions{MaxAttempts: 8, RetryBase: 300 * time.Millisecond, RetryMax: time.Second}})
	cfg := "tests:\n  command: [python3, -c, \"print('tests ran')\"]\n"
	base := h.git.Commit("", "base", map[string]string{".aster.yml": cfg, "app.py": "def f(x):\n    return x\n"})
	head := h.git.Commit(base, "change", map[string]string{"app.py": "def f(x):\n    return x + 1\n"})
	h.push("outage-3", "opened", 5, base, head, "")
	waitRetried(t, h)
	if !strings.Contains(h.logs.String(), "could not run the tests now") {
		t.Errorf("the retried attempt does not name the tests:\n%s", h.logs.String())
	}
	outage.back.Store(true)
	recs := h.waitHistory(5, 1, 4*time.Minute)
	if r := recs[0]; r.Attempt < 2 || r.Conclusion != ConclusionSuccess {
		t.Fatalf("record %+v: want a successful review after a retry", r)
	}
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "success" {
		t.Fatalf("check runs %+v: want one, completed, success", runs)
	}
}

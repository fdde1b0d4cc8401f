package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/textclip"
	"github.com/asterhq/aster/internal/workspace"
)

// Test step statuses.
const (
	TestsPassed  = "passed"
	TestsFailed  = "failed"
	TestsError   = "error"
	TestsSkipped = "skipped"
)

// TestRunner runs a change's tests.
type TestRunner interface {
	RunTests(ctx context.Context, req TestRequest) TestsReport
}

// TestRequest is one test run.
type TestRequest struct {
	Change *Change
	Config repoconfig.Config
}

// testsTmpBytes is the least /tmp a test run gets; tmpfs takes memory only
// as it fills.
const testsTmpBytes = 1 << 30

// SandboxTests runs tests the way POST /v1/test does: the command from
// .aster.yml (tests.command) or detected from the tree (internal/testrun),
// after the install phase (tests.setup, or detected) when the project has
// dependencies, through the one two-phase runner (internal/testphase): the
// install in a sandbox whose only way out is the egress relay, the tests in
// a fresh one with no network over the head snapshot plus the dependencies,
// the report parsed as it streams out.
type SandboxTests struct {
	Sandbox gate.Sandbox
	Image   string
	// Limits are the base limits; the timeout is tests.timeout or Timeout.
	Limits  sandbox.Limits
	Timeout time.Duration
	TempDir string
	Caps    workspace.Caps
	// Runner runs the phases (nil: the test phase alone; a needed install
	// is reported as not run).
	Runner *testphase.Runner
}

const testOutputTail = 4 << 10

// RunTests implements TestRunner.
func (s *SandboxTests) RunTests(ctx context.Context, req TestRequest) TestsReport {
	rep := TestsReport{Command: []string{}, ExitCode: -1, Summary: testrun.Summary{Failures: []testrun.Failure{}}}
	raw, err := req.Change.OpenSnapshot()
	if err != nil {
		rep.Status, rep.Reason = TestsError, "open snapshot: "+err.Error()
		return rep
	}
	snap, err := gate.SpoolSnapshot(raw, s.TempDir, s.Caps)
	if cerr := raw.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		rep.Status, rep.Reason = TestsError, "snapshot: "+textclip.OneLine(err.Error(), maxReasonBytes)
		return rep
	}
	defer snap.Remove()
	var plan testrun.Plan
	if cmd := req.Config.Tests.Command; len(cmd) > 0 {
		plan, err = testrun.Custom(cmd, "", "")
	} else {
		plan, err = testrun.Detect(snap.Files())
	}
	if err != nil {
		rep.Status = TestsSkipped
		rep.Reason = textclip.OneLine(err.Error(), maxReasonBytes)
		return rep
	}
	rep.Command = plan.Command() // the repository's command, not the wrapper that runs it
	install, err := testphase.Step(req.Config.Tests.Setup, snap.Files(), "", plan)
	if err != nil {
		rep.Status, rep.Reason = TestsError, textclip.OneLine(err.Error(), maxReasonBytes)
		return rep
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	limits := s.Limits
	limits.TimeoutMS = req.Config.TestTimeout(timeout).Milliseconds()
	// Go 1.20 and later build the standard library into the build cache
	// (GOCACHE is under /tmp): more than the default /tmp holds. A command
	// from .aster.yml may be anything, so it gets that much too.
	limits.TmpBytes = max(limits.TmpBytes, testsTmpBytes, plan.TmpBytes(limits.TmpBytes, 0))
	env := map[string]string{"HOME": "/tmp"}
	runner := s.Runner
	if runner == nil {
		runner = &testphase.Runner{TempDir: s.TempDir}
	}
	job, err := testphase.Builder{DefaultImage: s.Image}.Build(testphase.Input{Env: env, Limits: limits, Plan: plan, Install: install,
		Repo: req.Change.CacheID, Scope: req.Change.CacheScope,
		Open: func() (io.ReadCloser, error) { return snap.Open() }})
	if err != nil {
		rep.Status, rep.Reason = TestsError, textclip.OneLine(err.Error(), maxReasonBytes)
		return rep
	}
	t0 := time.Now()
	out, _ := runner.Run(ctx, job, func(ctx context.Context, _ string, spec sandbox.Spec) (sandbox.Result, error) {
		return s.Sandbox.Run(ctx, spec)
	})
	rep.DurationMS = time.Since(t0).Milliseconds()
	rep.Install = out.Install
	rep.Summary = out.Summary
	if rep.Summary.Failures == nil {
		rep.Summary.Failures = []testrun.Failure{}
	}
	res, runErr := out.Result, out.Err
	rep.Unavailable = errors.Is(runErr, sandbox.ErrUnavailable) || errors.Is(runErr, sandbox.ErrBusy)
	rep.SandboxStatus, rep.ExitCode = string(res.Status), res.ExitCode
	if out.Phase == testphase.PhaseInstall {
		rep.Status, rep.Reason = TestsError, "the install phase failed, the tests did not run: "+out.Install.Reason
		rep.Output = strings.Join(out.Install.ErrorLines, "\n")
		return rep
	}
	rep.TestDurationMS = res.Duration.Milliseconds()
	switch res.Status {
	case sandbox.StatusOK:
		rep.Status = TestsPassed
		if rep.Summary.Failed > 0 {
			rep.Status = TestsFailed
		}
	case sandbox.StatusExitNonzero:
		rep.Status = TestsFailed
		if res.ExitCode == 127 {
			rep.Status, rep.Reason = TestsError, "the test command is not installed in the image"
		}
	case sandbox.StatusTimeout:
		rep.Status, rep.Reason = TestsError, fmt.Sprintf("the tests ran past their %s limit and were killed", time.Duration(limits.TimeoutMS)*time.Millisecond)
	case sandbox.StatusOOM:
		rep.Status, rep.Reason = TestsError, "the tests ran out of memory"
	default:
		rep.Status = TestsError
		rep.Reason = res.Error
		if runErr != nil {
			rep.Reason = runErr.Error()
		}
		rep.Reason = textclip.OneLine(rep.Reason, maxReasonBytes)
	}
	if need, have, ok := goTooNew(plan, res.Stderr.Data); ok && rep.Status == TestsFailed {
		rep.Status = TestsError
		rep.Reason = fmt.Sprintf("needs go %s: the module's go.mod declares it and the image has go %s (GOTOOLCHAIN=local, no download); the tests did not run", need, have)
	}
	if rep.Status != TestsPassed {
		out := res.Stderr.Data
		if plan.Format == testrun.FormatNone {
			out = append(append([]byte{}, res.Stdout.Data...), res.Stderr.Data...)
		}
		if len(out) > testOutputTail {
			out = out[len(out)-testOutputTail:]
		}
		rep.Output = strings.ToValidUTF8(string(out), "\uFFFD")
	}
	return rep
}

// goTooNewRE is what go prints when a go.mod asks for a newer Go than it is
// and GOTOOLCHAIN=local forbids switching.
var goTooNewRE = regexp.MustCompile(`(?m)^go: (?:[^\n]*)requires go >= ([0-9][0-9a-z.]{0,31}) \(running go ([0-9][0-9a-z.]{0,31});`)

// goTooNew reports the Go a Go test run needed, and the one it had, when go
// refused to start because the module declares a newer Go.
func goTooNew(plan testrun.Plan, stderr []byte) (need, have string, ok bool) {
	if plan.Framework != "go" {
		return "", "", false
	}
	m := goTooNewRE.FindSubmatch(stderr)
	if m == nil {
		return "", "", false
	}
	return string(m[1]), string(m[2]), true
}

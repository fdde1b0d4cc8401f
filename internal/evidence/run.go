package evidence

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/textclip"
	"github.com/asterhq/aster/internal/workspace"
)

// Verification statuses.
const (
	Confirmed    = "confirmed"
	Refuted      = "refuted"
	Inconclusive = "inconclusive"
)

// Run statuses: how one run of the evidence ended.
const (
	RunPassed  = "passed"  // exit 0
	RunFailed  = "failed"  // a nonzero exit of the command itself
	RunTimeout = "timeout" // killed at the run's time limit
	RunOOM     = "oom"     // killed at the memory limit
	RunError   = "error"   // nothing judged ran: build, install, missing command, output flood, sandbox
)

// Verification is what running a comment's evidence showed. Status is
// decided from exit statuses alone.
type Verification struct {
	// Status is confirmed (the run ended as the claim expects), refuted (it
	// ended the other way) or inconclusive (nothing judged ran).
	Status string `json:"status"`
	Reason string `json:"reason"`
	Expect Expect `json:"expect"`
	// Argv and Files are the evidence's command and the files it added.
	Argv  []string `json:"argv"`
	Files []string `json:"files"`
	// Head is the run over the head revision; Base over the base revision
	// (only for a failure confirmed on the head, when the base is known).
	Head *Run `json:"head"`
	Base *Run `json:"base"`
}

// Run is one sandbox run of evidence.
type Run struct {
	Revision string `json:"revision"`
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	// Output is the tail of stdout and stderr, redacted and capped.
	Output          string `json:"output"`
	OutputTruncated bool   `json:"output_truncated,omitempty"`
	DurationMS      int64  `json:"duration_ms"`
	Reason          string `json:"reason,omitempty"`
	// Install is the install phase's status and cache ("" without one).
	Install string `json:"install,omitempty"`
}

// Target is a revision to run evidence over.
type Target struct {
	// Revision is the commit SHA, for the record.
	Revision string
	// Open returns the revision as an uncompressed tar stream.
	Open func() (io.ReadCloser, error)
}

// Request is one evidence check.
type Request struct {
	Evidence *Evidence
	Head     Target
	// Base, when set, is run too for an expected failure confirmed on the
	// head: a pass there shows the change brought the failure in.
	Base *Target
	// Setup is tests.setup of the base configuration (nil: detected).
	Setup []string
	// Repo and Scope are the dependency cache's identity (see testphase.Job).
	Repo, Scope string
}

// Engine runs evidence in sandboxes. The zero value is not usable: Sandbox
// and Image are required.
type Engine struct {
	Sandbox gate.Sandbox
	Image   string
	// Limits are the test limits; Timeout bounds each run (default 2m).
	Limits  sandbox.Limits
	Timeout time.Duration
	// Runner runs the install and test phases (nil: no install, no cache).
	Runner  *testphase.Runner
	TempDir string
	Caps    workspace.Caps
	// Secrets are redacted from the output (well-known formats always are).
	Secrets []string
	// MaxOutputBytes caps each run's recorded output (default 2 KiB).
	MaxOutputBytes int
}

// DefaultTimeout bounds one evidence run when the Engine sets none.
const DefaultTimeout = 2 * time.Minute

// buildFailed is the exit status the Go wrapper gives when the package does
// not build; a command's own exit 125 is inconclusive too, never confirmed.
const buildFailed = 125

// goWrapper seeds the Go build cache from the image ($1), then compiles the
// tests alone (running none): a package that does not build is an error,
// not a failing test. Then it runs the command.
const goWrapper = `if [ -d "$1" ] && [ ! -e "$GOCACHE" ]; then mkdir -p "${GOCACHE%/*}" && cp -R "$1" "$GOCACHE"; fi; shift
"$@" -run '^$' >/dev/null 2>&1 || exit 125
exec "$@"`

// Verify runs the evidence over the head and, where it tells something,
// over the base. It never fails: what went wrong is an inconclusive
// Verification with its reason.
func (e *Engine) Verify(ctx context.Context, req Request) Verification {
	ev := req.Evidence
	v := Verification{Status: Inconclusive, Argv: []string{}, Files: []string{}}
	if ev == nil {
		v.Reason = "no evidence"
		return v
	}
	v.Expect, v.Argv, v.Files = ev.Expect, slices.Clone(ev.Argv), ev.Paths()
	if err := ev.Validate(); err != nil {
		v.Reason = err.Error()
		return v
	}
	head := e.run(ctx, ev, req.Head, req)
	v.Head = &head
	switch {
	case head.Status != RunPassed && head.Status != RunFailed:
		v.Status, v.Reason = Inconclusive, "the head run did not judge the claim: "+cmpOr(head.Reason, head.Status)
		return v
	case (head.Status == RunFailed) == (ev.Expect == ExpectFail):
		v.Status, v.Reason = Confirmed, fmt.Sprintf("the command %s on the head as the claim expects", verb(head.Status))
	default:
		v.Status, v.Reason = Refuted, fmt.Sprintf("the command %s on the head; the claim expects it to %s", verb(head.Status), ev.Expect)
		return v
	}
	if ev.Expect == ExpectFail && req.Base != nil && req.Base.Open != nil && ctx.Err() == nil {
		base := e.run(ctx, ev, *req.Base, req)
		v.Base = &base
		switch base.Status {
		case RunPassed:
			v.Reason += "; it passes on the base: the change brought the failure in"
		case RunFailed:
			v.Reason += "; it fails on the base too: the problem predates the change"
		}
	}
	return v
}

// Recheck re-runs a model finding's evidence over a new head alone (for
// the lifecycle of an earlier finding): confirmed means the finding still
// holds there, refuted that it no longer does (resolved), inconclusive
// that the check could not say.
func (e *Engine) Recheck(ctx context.Context, ev *Evidence, head Target, setup []string, repo, scope string) Verification {
	return e.Verify(ctx, Request{Evidence: ev, Head: head, Setup: setup, Repo: repo, Scope: scope})
}

func verb(status string) string {
	if status == RunPassed {
		return "passed"
	}
	return "failed"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// run runs the evidence once over one revision.
func (e *Engine) run(ctx context.Context, ev *Evidence, t Target, req Request) (r Run) {
	r = Run{Revision: t.Revision, Status: RunError, ExitCode: -1}
	t0 := time.Now()
	defer func() { r.DurationMS = time.Since(t0).Milliseconds() }()
	if e.Sandbox == nil || e.Image == "" {
		r.Reason = "no sandbox to run evidence in"
		return r
	}
	if t.Open == nil {
		r.Reason = "the revision's tree is not available"
		return r
	}
	raw, err := t.Open()
	if err != nil {
		r.Reason = "open the revision: " + e.oneLine(err.Error())
		return r
	}
	snap, err := gate.SpoolSnapshot(raw, e.TempDir, e.Caps)
	if cerr := raw.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		r.Reason = "snapshot: " + e.oneLine(err.Error())
		return r
	}
	defer snap.Remove()
	if err := checkOverlay(snap.Open, ev.Files); err != nil {
		r.Reason = err.Error()
		return r
	}
	names := slices.Clone(snap.Files())
	for _, p := range ev.Paths() {
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	plan := planFor(ev.Argv, names)
	install, err := testphase.Step(req.Setup, names, "", plan)
	if err != nil {
		r.Reason = "install step: " + e.oneLine(err.Error())
		return r
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limits := e.Limits
	limits.TimeoutMS = timeout.Milliseconds()
	limits.TmpBytes = max(limits.TmpBytes, plan.TmpBytes(limits.TmpBytes, 0))
	runner := e.Runner
	if runner == nil {
		runner = &testphase.Runner{TempDir: e.TempDir}
	}
	job, err := testphase.Builder{DefaultImage: e.Image}.Build(testphase.Input{Env: map[string]string{"HOME": "/tmp"},
		Limits: limits, Plan: plan, Install: install, InstallTimeoutFixed: timeout,
		Repo: req.Repo, Scope: req.Scope, Open: overlay(snap.Open, ev.Files)})
	if err != nil {
		r.Reason = "job: " + e.oneLine(err.Error())
		return r
	}
	out, err := runner.Run(ctx, job, func(ctx context.Context, _ string, spec sandbox.Spec) (sandbox.Result, error) {
		return e.Sandbox.Run(ctx, spec)
	})
	if err != nil {
		r.Reason = "run: " + e.oneLine(err.Error())
		return r
	}
	if in := out.Install; in != nil {
		r.Install = string(in.Status)
		if in.Cache != "" {
			r.Install += " (cache " + string(in.Cache) + ")"
		}
	}
	res := out.Result
	r.ExitCode = res.ExitCode
	r.Output, r.OutputTruncated = e.output(res)
	if out.Phase == testphase.PhaseInstall {
		r.Reason = "the install phase failed: " + e.oneLine(out.Install.Reason)
		return r
	}
	r.Status, r.Reason = classify(res, plan, timeout)
	if r.Status == RunError && r.Reason == "" && out.Err != nil {
		r.Reason = e.oneLine(out.Err.Error())
	}
	return r
}

// classify turns a sandbox result into a run status, from the exit status
// alone: what the command printed is never read.
func classify(res sandbox.Result, plan testrun.Plan, timeout time.Duration) (string, string) {
	switch res.Status {
	case sandbox.StatusOK:
		return RunPassed, ""
	case sandbox.StatusTimeout:
		return RunTimeout, fmt.Sprintf("the command ran past its %s limit and was killed", timeout)
	case sandbox.StatusOOM:
		return RunOOM, "the command ran out of memory"
	case sandbox.StatusExitNonzero:
	default:
		return RunError, textclip.OneLine(fmt.Sprintf("the sandbox ended the run (%s) %s", res.Status, res.Error), 300)
	}
	switch code := res.ExitCode; {
	case code == 126 || code == 127:
		return RunError, fmt.Sprintf("exit %d: the command is not installed in the image or not executable", code)
	case code == buildFailed && plan.Framework == "go":
		return RunError, "the Go package with the evidence does not build"
	case code == buildFailed:
		return RunError, "exit 125 is reserved for a build failure"
	case plan.Framework == "pytest" && code >= 2 && code <= 5:
		return RunError, fmt.Sprintf("pytest exit %d: collection error, usage error or no tests collected", code)
	}
	return RunFailed, ""
}

// planFor is the plan the evidence runs under: the framework its command
// names (for the install step, the environment and the build check), else
// the one detected from the tree, with the evidence's own command.
func planFor(argv []string, names []string) testrun.Plan {
	var p testrun.Plan
	switch {
	case isGoTest(argv):
		p = testrun.GoPlan()
		p.Argv = append([]string{"sh", "-c", goWrapper, "aster-evidence", testrun.GoCacheDir}, argv...)
	case isPytest(argv):
		p = testrun.PytestPlan()
		p.Argv = slices.Clone(argv)
	default:
		if d, err := testrun.Detect(names); err == nil {
			p = d
		} else {
			p = testrun.Plan{Framework: "custom"}
		}
		p.Argv = slices.Clone(argv)
	}
	p.Format, p.ReportPath = testrun.FormatNone, ""
	return p
}

func isGoTest(argv []string) bool {
	return len(argv) >= 2 && path.Base(argv[0]) == "go" && argv[1] == "test"
}

func isPytest(argv []string) bool {
	if len(argv) >= 1 && path.Base(argv[0]) == "pytest" {
		return true
	}
	return len(argv) >= 3 && strings.HasPrefix(path.Base(argv[0]), "python") && argv[1] == "-m" && argv[2] == "pytest"
}

// output is the tail of stdout then stderr, redacted, valid UTF-8, capped.
func (e *Engine) output(res sandbox.Result) (string, bool) {
	limit := e.MaxOutputBytes
	if limit <= 0 {
		limit = 2 << 10
	}
	s := strings.ToValidUTF8(string(res.Stdout.Data)+string(res.Stderr.Data), "\uFFFD")
	s = safetext.NewRedactor(e.Secrets).RedactString(s)
	cut := res.Stdout.Truncated || res.Stderr.Truncated
	if len(s) > limit {
		s, cut = textclip.Tail(s, limit, ""), true
	}
	return s, cut
}

func (e *Engine) oneLine(s string) string {
	return textclip.OneLine(safetext.NewRedactor(e.Secrets).RedactString(s), 300)
}

package modelstep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/evidence"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/llm"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

// Agentic tool names.
const (
	ToolRunTests   = "run_tests"
	ToolRunCommand = "run_command"
)

// Agent runs the model's tool calls (opt-in, `aster review --agentic`) in
// sandboxes made by the sandbox Manager: the usual hardening, network none,
// over the change's head revision, with only HOME in the environment. It
// never sees a credential: nothing secret is in its Spec, and tool output
// is redacted before the model reads it.
type Agent struct {
	Sandbox gate.Sandbox
	Image   string
	// Limits are the base limits; Timeout bounds each tool run.
	Limits  sandbox.Limits
	Timeout time.Duration
	// Change and Config are the change under review (its head snapshot)
	// and its base configuration (tests.command).
	Change  *review.Change
	Config  repoconfig.Config
	TempDir string
	Caps    workspace.Caps

	mu   sync.Mutex
	snap *gate.Snapshot
}

var _ llm.ToolRunner = (*Agent)(nil)

// Tools describes the agent's tools to the model.
func (a *Agent) Tools() []llm.Tool {
	return []llm.Tool{
		{
			Name: ToolRunTests,
			Description: "Run the repository's tests (the configured command, or the one detected: go test, pytest, npm test) " +
				"over the change's head revision in an isolated sandbox with no network. Returns the summary and failing tests.",
			Parameters: map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}, "required": []any{}},
		},
		{
			Name: ToolRunCommand,
			Description: "Run one command (argv, no shell unless you call one) in an isolated sandbox with no network, " +
				"in a copy of the change's head revision at /work. Returns the exit status and the output, truncated.",
			Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"argv"},
				"properties": map[string]any{"argv": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
					"description": "program and arguments, e.g. [\"python3\", \"-c\", \"print(1)\"]"}}},
		},
	}
}

// RunTool implements llm.ToolRunner.
func (a *Agent) RunTool(ctx context.Context, call llm.ToolCall) (string, error) {
	switch call.Name {
	case ToolRunTests:
		return a.runTests(ctx)
	case ToolRunCommand:
		var args struct {
			Argv []string `json:"argv"`
		}
		if err := json.Unmarshal(call.Arguments, &args); err != nil {
			return "", errors.New(`arguments must be {"argv": ["program", "arg", ...]}`)
		}
		if err := evidence.CheckArgv(args.Argv); err != nil {
			return "", err
		}
		return a.runCommand(ctx, args.Argv)
	}
	return "", fmt.Errorf("unknown tool %q", call.Name)
}

func (a *Agent) timeout() time.Duration {
	if a.Timeout > 0 {
		return a.Timeout
	}
	return 2 * time.Minute
}

func (a *Agent) runTests(ctx context.Context) (string, error) {
	if a.Change == nil || a.Change.OpenSnapshot == nil {
		return "", errors.New("no snapshot of the change to test")
	}
	st := &review.SandboxTests{Sandbox: a.Sandbox, Image: a.Image, Limits: a.Limits, Timeout: a.timeout(), TempDir: a.TempDir, Caps: a.Caps}
	cfg := a.Config
	cfg.Tests.Timeout = "" // the agent's own timeout applies
	rep := st.RunTests(ctx, review.TestRequest{Change: a.Change, Config: cfg})
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s\n", rep.Status)
	if len(rep.Command) > 0 {
		fmt.Fprintf(&b, "command: %s\n", strings.Join(rep.Command, " "))
	}
	fmt.Fprintf(&b, "passed %d, failed %d, skipped %d; exit code %d; %.1fs\n", rep.Summary.Passed, rep.Summary.Failed, rep.Summary.Skipped, rep.ExitCode, float64(rep.DurationMS)/1000)
	if rep.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", rep.Reason)
	}
	for _, f := range rep.Summary.Failures {
		fmt.Fprintf(&b, "FAIL %s: %s\n", f.Name, f.Message)
	}
	if rep.Output != "" {
		fmt.Fprintf(&b, "output (tail):\n%s\n", rep.Output)
	}
	return b.String(), nil
}

// snapshot spools the head revision once per review.
func (a *Agent) snapshot() (*gate.Snapshot, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.snap != nil {
		return a.snap, nil
	}
	if a.Change == nil || a.Change.OpenSnapshot == nil {
		return nil, errors.New("no snapshot of the change")
	}
	raw, err := a.Change.OpenSnapshot()
	if err != nil {
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	snap, err := gate.SpoolSnapshot(raw, a.TempDir, a.Caps)
	if cerr := raw.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	a.snap = snap
	return snap, nil
}

func (a *Agent) runCommand(ctx context.Context, argv []string) (string, error) {
	snap, err := a.snapshot()
	if err != nil {
		return "", err
	}
	tr, err := snap.Open()
	if err != nil {
		return "", err
	}
	defer tr.Close()
	limits := a.Limits
	limits.TimeoutMS = a.timeout().Milliseconds()
	spec := sandbox.Spec{Image: a.Image, Argv: argv, Env: map[string]string{"HOME": "/tmp"}, Limits: limits,
		Workspace: sandbox.Workspace{Tar: tr, Filtered: true}}
	res, err := a.Sandbox.Run(ctx, spec)
	if err != nil && res.Status == "" {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s, exit code %d, %.1fs\n", res.Status, res.ExitCode, res.Duration.Seconds())
	if res.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", res.Error)
	}
	writeStream(&b, "stdout", res.Stdout)
	writeStream(&b, "stderr", res.Stderr)
	return b.String(), nil
}

func writeStream(b *strings.Builder, name string, o sandbox.Output) {
	if len(o.Data) == 0 {
		return
	}
	trunc := ""
	if o.Truncated {
		trunc = " (truncated by the sandbox)"
	}
	fmt.Fprintf(b, "%s%s:\n%s\n", name, trunc, strings.ToValidUTF8(string(o.Data), "\uFFFD"))
}

// Close removes the spooled snapshot.
func (a *Agent) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.snap != nil {
		_ = a.snap.Remove()
		a.snap = nil
	}
}

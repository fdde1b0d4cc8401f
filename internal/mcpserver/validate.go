package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox"
)

// ValidateInput is the validate tool's arguments.
type ValidateInput struct {
	SnapshotInput
	Analyzers []string `json:"analyzers,omitempty" jsonschema:"analyzers to run, by name (default: all of them)."`
	Changed   []string `json:"changed,omitempty" jsonschema:"paths of the files that changed: analyzers that take a file list look only at these (analyzers that scan the whole tree still do). Default: every file."`
}

func (s *Server) addValidate() error {
	in, err := inputSchemaFor[ValidateInput](s)
	if err != nil {
		return err
	}
	if a := in.Properties["analyzers"]; a != nil && a.Items != nil {
		for _, n := range gate.Names(s.analyzers()) {
			a.Items.Enum = append(a.Items.Enum, n)
		}
	}
	out, err := jsonschemaFor[gate.Result]()
	if err != nil {
		return err
	}
	singleTypes(out)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "validate",
		Title: "Static analysis of a snapshot",
		Description: fmt.Sprintf(`Run Aster's static-analysis gate over a snapshot: each analyzer (%s) in its own fresh, hardened sandbox with no network. Returns findings (analyzer, rule, severity, path, line range, message) and each analyzer's status (ok, failed, timeout, skipped with the reason, error) and duration. An analyzer that does not apply (no matching files, tool absent from the image) is skipped, not failed.

The snapshot is a directory on the server (path; only under its allowed directories: %s), files inline, or a base64 tar.`,
			strings.Join(gate.Names(s.analyzers()), ", "), s.allowedSummary()),
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  &mcp.ToolAnnotations{Title: "Static analysis", ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, s.validate)
	return nil
}

func (s *Server) analyzers() []gate.Analyzer {
	if s.opts.Analyzers != nil {
		return s.opts.Analyzers
	}
	return gate.Builtins()
}

func (s *Server) validate(ctx context.Context, req *mcp.CallToolRequest, in ValidateInput) (*mcp.CallToolResult, gate.Result, error) {
	ctx, done := s.track(ctx)
	defer done()
	all := s.analyzers()
	chosen := all
	if len(in.Analyzers) > 0 {
		chosen = nil
		for _, name := range in.Analyzers {
			a, ok := gate.Lookup(all, name)
			if !ok {
				return nil, gate.Result{}, toolError(sandbox.Invalidf("unknown analyzer %q (have %s)", name, strings.Join(gate.Names(all), ", ")))
			}
			if !slices.ContainsFunc(chosen, func(c gate.Analyzer) bool { return c.Name == name }) {
				chosen = append(chosen, a)
			}
		}
	}
	limits, _, err := resolveLimits(nil, s.opts.Defaults, s.opts.Ceilings)
	if err != nil {
		return nil, gate.Result{}, toolError(err)
	}
	snap, err := s.spoolSnapshot(in.SnapshotInput, limits.WorkdirBytes)
	if err != nil {
		return nil, gate.Result{}, toolError(err)
	}
	defer snap.Remove()

	p := newProgress(ctx, req, s.opts.ProgressInterval)
	p.status = fmt.Sprintf("running %d analyzers over %d files", len(chosen), len(snap.Files()))
	p.begin()
	var mu sync.Mutex
	finished := 0
	runner := gate.NewRunner(gateSandbox{s.opts.Executor}, gate.RunnerOptions{
		Image:    s.opts.Images[0],
		Limits:   limits,
		Parallel: 2,
		Logger:   s.log,
		Progress: func(e gate.Event) {
			if !e.Done {
				return
			}
			mu.Lock()
			finished++
			msg := fmt.Sprintf("%d/%d analyzers done; %s: %s", finished, len(chosen), e.Analyzer, e.Result.Status)
			mu.Unlock()
			p.note(msg)
		},
	})
	res := runner.Run(ctx, gate.Request{Snapshot: snap, Analyzers: chosen, Changed: in.Changed})
	p.finishWith(fmt.Sprintf("finished: %d findings", len(res.Findings)))
	if ctx.Err() != nil {
		return nil, gate.Result{}, fmt.Errorf("cancelled: %v", context.Cause(ctx))
	}
	s.log.Info("tool call finished", "tool", "validate", "findings", len(res.Findings), "complete", res.Complete(), "ms", res.DurationMS)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: renderGate(res)}}}, res, nil
}

// gateSandbox lets the gate run its analyzers through the server's Executor.
type gateSandbox struct{ ex Executor }

func (g gateSandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	return g.ex.RunWithOptions(ctx, spec, sandbox.RunOptions{})
}

// maxTextFindings bounds the findings written out in the text rendering.
const maxTextFindings = 100

func renderGate(r gate.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "validate: %d findings in %s\n", len(r.Findings), round(msDuration(r.DurationMS)))
	for _, a := range r.Analyzers {
		fmt.Fprintf(&b, "  %s: %s", a.Name, a.Status)
		if a.Status == gate.StatusOK {
			fmt.Fprintf(&b, ", %d findings", a.Findings)
		}
		if a.Reason != "" {
			fmt.Fprintf(&b, " (%s)", a.Reason)
		}
		b.WriteByte('\n')
	}
	if !r.Complete() {
		b.WriteString("Not every analyzer completed: the findings may be incomplete.\n")
	}
	for i, f := range r.Findings {
		if i == maxTextFindings {
			fmt.Fprintf(&b, "... %d more findings in the structured result\n", len(r.Findings)-i)
			break
		}
		loc := f.Path
		if f.StartLine > 0 {
			loc = fmt.Sprintf("%s:%d", f.Path, f.StartLine)
			if f.EndLine > f.StartLine {
				loc += fmt.Sprintf("-%d", f.EndLine)
			}
		}
		fmt.Fprintf(&b, "%s: %s %s (%s): %s\n", loc, f.Severity, f.RuleID, f.Analyzer, printable([]byte(f.Message)))
	}
	return b.String()
}

func jsonschemaFor[T any]() (*jsonschema.Schema, error) {
	sch, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	return sch, nil
}

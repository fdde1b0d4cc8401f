package gate

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/textclip"
)

// ValidateInput is one /v1/validate request, decoded by the HTTP layer
// (package sandboxapi) from its wire form (api.ValidateRequest).
type ValidateInput struct {
	// Snapshot is the repository, already validated and spooled.
	Snapshot *Snapshot
	// Analyzers names the analyzers to run (default: all the Validator has).
	Analyzers []string
	// ChangedFiles, when not nil, limits file-list analyzers to these paths
	// and marks findings by whether they lie in one (reported).
	ChangedFiles []string
}

// ValidateResponse is the answer of POST /v1/validate.
type ValidateResponse struct {
	Findings   []Marked         `json:"findings"`
	Summary    Summary          `json:"summary"`
	Analyzers  []AnalyzerResult `json:"analyzers"`
	DurationMS int64            `json:"duration_ms"`
}

// MaxChangedFiles caps a validate request's changed-file list.
const MaxChangedFiles = 100_000

// Validator runs the analyzers a request names over a snapshot: the domain
// of POST /v1/validate, which sandboxapi serves behind the same auth,
// admission and body limits as /v1/execute.
type Validator struct {
	runner    *Runner
	analyzers []Analyzer
}

// NewValidator returns a Validator whose requests may name analyzers (nil
// is Builtins()) and run through runner.
func NewValidator(runner *Runner, analyzers []Analyzer) *Validator {
	if analyzers == nil {
		analyzers = Builtins()
	}
	return &Validator{runner: runner, analyzers: analyzers}
}

// Validate runs in's analyzers over its snapshot and marks the findings. A
// request that names an unknown analyzer, or too many changed files, is an
// ErrInvalidSpec; analyzer failures are reported per analyzer, not as an
// error.
func (v *Validator) Validate(ctx context.Context, in ValidateInput) (ValidateResponse, error) {
	analyzers, err := v.pick(in.Analyzers)
	if err != nil {
		return ValidateResponse{}, err
	}
	if len(in.ChangedFiles) > MaxChangedFiles {
		return ValidateResponse{}, sandbox.Invalidf("changed_files has %d entries, more than %d", len(in.ChangedFiles), MaxChangedFiles)
	}
	t0 := time.Now()
	greq := Request{Snapshot: in.Snapshot, Analyzers: analyzers}
	mode := ModeNoFilter
	var changed []*diff.File
	if in.ChangedFiles != nil {
		greq.Changed = in.ChangedFiles
		mode = ModeFile
		for _, p := range in.ChangedFiles {
			changed = append(changed, &diff.File{NewPath: p, OldPath: p, Status: diff.StatusModified})
		}
	}
	res := v.runner.Run(ctx, greq)
	marked := NewFilter(changed, mode).MarkAll(res.Findings)
	return ValidateResponse{Findings: marked, Summary: Summarize(marked), Analyzers: res.Analyzers, DurationMS: time.Since(t0).Milliseconds()}, nil
}

func (v *Validator) pick(names []string) ([]Analyzer, error) {
	if len(names) == 0 {
		return v.analyzers, nil
	}
	if len(names) > len(v.analyzers) {
		return nil, sandbox.Invalidf("%d analyzers named; this server has %d", len(names), len(v.analyzers))
	}
	var out []Analyzer
	for _, n := range names {
		a, ok := Lookup(v.analyzers, n)
		if !ok {
			return nil, sandbox.Invalidf("unknown analyzer %q (have %s)", textclip.Head(n, 64, "…"), strings.Join(Names(v.analyzers), ", "))
		}
		if !slices.ContainsFunc(out, func(x Analyzer) bool { return x.Name == n }) {
			out = append(out, a)
		}
	}
	return out, nil
}

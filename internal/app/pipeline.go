package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/workspace"
)

// PipelineOptions configure a PipelineReviewer.
type PipelineOptions struct {
	// Gate runs the analyzers in sandboxes (nil: no analyzers, and the review says so).
	Gate *gate.Runner
	// Builtins are the analyzers .aster.yml adjusts (nil: gate.Builtins()).
	Builtins []gate.Analyzer
	// Tests runs the repository's tests in a sandbox, when .aster.yml has a test command or
	// the input asks for tests.
	Tests review.TestRunner
	// Model returns the model step for one review (its caps are per review); nil, or a nil
	// Reviewer, skips the step and the review says so.
	Model   func() (review.Reviewer, error)
	TempDir string
	Caps    workspace.Caps
}

// PipelineReviewer is the Reviewer over internal/review: gate, tests and model on the pull
// request's head, configured by the base revision's .aster.yml.
type PipelineReviewer struct{ opts PipelineOptions }

var _ Reviewer = (*PipelineReviewer)(nil)

// NewPipelineReviewer returns the pipeline as a Reviewer.
func NewPipelineReviewer(opts PipelineOptions) *PipelineReviewer {
	return &PipelineReviewer{opts: opts}
}

// Review implements Reviewer.
func (p *PipelineReviewer) Review(ctx context.Context, in ReviewInput) (ReviewOutput, error) {
	if in.ConfigError != "" {
		return configProblem(in.ConfigError), nil
	}
	cfg, source := repoconfig.Default(), "defaults"
	if in.Config != nil {
		c, err := repoconfig.Parse(in.Config)
		if err != nil {
			return configProblem(fmt.Sprintf("%s on the base revision %s: %v", repoconfig.FileName, short(in.Base.SHA), err)), nil
		}
		cfg, source = c, "base:"+in.Base.SHA+":"+repoconfig.FileName
	}
	files, truncated, err := parseDiff(in.Diff)
	if err != nil {
		return ReviewOutput{}, err
	}
	ch := &review.Change{
		Repository: in.Repository, Title: in.Title, Body: in.Body,
		Base: review.Revision{Ref: in.Base.Ref, SHA: in.Base.SHA}, Head: review.Revision{Ref: in.Head.Ref, SHA: in.Head.SHA},
		Diff: files, DiffTruncated: truncated || in.DiffTruncated,
		Config: cfg, ConfigSource: source, OpenSnapshot: in.OpenSnapshot,
	}
	for _, f := range files {
		if f.NewPath == repoconfig.FileName || f.OldPath == repoconfig.FileName {
			ch.HeadConfigChanged = true
		}
	}
	opts := review.Options{Gate: p.opts.Gate, Builtins: p.opts.Builtins, TempDir: p.opts.TempDir, SnapshotCaps: p.opts.Caps}
	if p.opts.Tests != nil && (len(cfg.Tests.Command) > 0 || in.Tests) {
		opts.Tests = p.opts.Tests
	}
	if p.opts.Model != nil {
		model, err := p.opts.Model()
		if err != nil {
			return ReviewOutput{}, fmt.Errorf("model step: %w", err)
		}
		opts.Reviewer = model
		if model != nil && in.SinceSHA != "" {
			incr, _, err := parseDiff(in.IncrementalDiff)
			if err != nil {
				return ReviewOutput{}, err
			}
			opts.Reviewer = incrementalModel{inner: model, files: incr, since: in.SinceSHA}
		}
	}
	rep, err := review.Run(ctx, ch, opts)
	if errors.Is(err, repoconfig.ErrInvalid) {
		return configProblem(err.Error()), nil
	}
	if err != nil {
		return ReviewOutput{}, err
	}
	return fromReport(rep), nil
}

func parseDiff(text []byte) ([]*diff.File, bool, error) {
	files, err := diff.Parse(bytes.NewReader(text), diff.Options{})
	if errors.Is(err, diff.ErrTooLarge) {
		return files, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("parse diff: %w", err)
	}
	for _, f := range files {
		if f.Truncated {
			return files, true, nil
		}
	}
	return files, false, nil
}

// configProblem is the review of a change whose base configuration is unusable: nothing
// ran, the check is neutral (not green, not red), and the summary says why.
func configProblem(why string) ReviewOutput {
	return ReviewOutput{
		Conclusion: ConclusionNeutral,
		Model:      ModelInfo{Status: "skipped", Note: "not reviewed: the configuration is unusable"},
		Notes:      []string{"not reviewed: " + why + " (fix it on the base branch; a pull request cannot change its own review)"},
	}
}

// incrementalModel shows the model only what changed since the last reviewed head (within
// the files the pipeline kept), so a push gets comments on its own lines only.
type incrementalModel struct {
	inner review.Reviewer
	files []*diff.File
	since string
}

func (m incrementalModel) Review(ctx context.Context, in review.ModelInput) (review.ModelReport, error) {
	kept := map[string]bool{}
	for _, f := range in.Diff {
		kept[f.Path()] = true
	}
	var files []*diff.File
	for _, f := range m.files {
		if kept[f.Path()] {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return review.ModelReport{Status: review.ModelSkipped,
			Note: "nothing reviewable changed since " + short(m.since)}, nil
	}
	in.Diff, in.Index = files, diff.NewIndex(files)
	return m.inner.Review(ctx, in)
}

// fromReport maps the pipeline's report to the app's output.
func fromReport(rep *review.Report) ReviewOutput {
	out := ReviewOutput{
		FailOn: rep.FailOn, FilterMode: string(rep.FilterMode),
		FilesChanged: rep.Files.Changed, FilesReviewed: rep.Files.Reviewed,
		Notes: slices.Clone(rep.Notes), DurationsMS: rep.DurationsMS,
	}
	switch rep.Conclusion {
	case review.Success:
		out.Conclusion = ConclusionSuccess
	case review.Failure:
		out.Conclusion = ConclusionFailure
	default:
		out.Conclusion = ConclusionNeutral
	}
	for _, m := range rep.Findings {
		out.Findings = append(out.Findings, Finding{
			Path: m.Path, StartLine: m.StartLine, EndLine: m.EndLine, Severity: string(m.Severity),
			Analyzer: m.Analyzer, Rule: m.RuleID, Message: m.Message, HelpURI: m.HelpURI,
			Reported: m.Reported, Suppressed: string(m.Suppressed), Fingerprint: m.Fingerprint,
		})
	}
	for _, a := range rep.Analyzers {
		out.Analyzers = append(out.Analyzers, AnalyzerInfo{Name: a.Name, Version: a.Version, Status: string(a.Status), Findings: a.Findings,
			DurationMS: a.DurationMS, Reason: a.Reason})
	}
	if t := rep.Tests; t != nil {
		ti := &TestsInfo{Status: t.Status, Command: t.Command, Passed: t.Summary.Passed, Failed: t.Summary.Failed,
			Skipped: t.Summary.Skipped, Reason: t.Reason}
		for _, f := range t.Summary.Failures {
			name := f.Name
			if f.Suite != "" {
				name = f.Suite + ": " + f.Name
			}
			ti.Failures = append(ti.Failures, name)
		}
		out.Tests = ti
	}
	m := rep.Model
	out.Model = ModelInfo{Status: m.Status, Note: m.Note, Provider: m.Provider, Model: m.Model, Dropped: len(m.DroppedComments)}
	out.ModelSummary = m.Summary
	for _, c := range m.Comments {
		body := c.Body
		out.Comments = append(out.Comments, Comment{Path: c.Path, Line: c.Line, EndLine: c.EndLine, Severity: string(c.Severity),
			Body: body, Suggestion: c.Suggestion, Fingerprint: c.Fingerprint})
	}
	out.Usage = Usage{Calls: m.Usage.Calls, InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens, CostUSD: m.Usage.CostUSD}
	for _, o := range rep.Files.Omitted {
		out.Skipped = append(out.Skipped, Skip{Path: o.Path, Reason: o.Reason})
	}
	for _, o := range m.OmittedFiles {
		out.Skipped = append(out.Skipped, Skip{Path: o.Path, Reason: "left out of the model's budget: " + o.Reason})
	}
	return out
}

package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/evidence"
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
	Model func() (review.Reviewer, error)
	// Evidence runs model comments' evidence (nil: none runs); MaxEvidenceRuns
	// is the operator's ceiling on a repository's model.max_evidence_runs.
	Evidence        review.EvidenceChecker
	MaxEvidenceRuns int
	TempDir         string
	Caps            workspace.Caps
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
func (p *PipelineReviewer) Review(ctx context.Context, in ReviewInput) (*review.Report, error) {
	if in.ConfigError != "" {
		return configProblem(in.ConfigError), nil
	}
	cfg, source, err := review.BaseConfig(in.Config, in.Base.SHA)
	if err != nil {
		return configProblem(err.Error()), nil
	}
	parsed := in.Parsed
	if parsed == nil {
		files, truncated, err := review.ParseDiff(bytes.NewReader(in.Diff), diff.Options{})
		if err != nil {
			return nil, err
		}
		parsed = &ParsedDiffs{Files: files, Truncated: truncated}
	}
	files := parsed.Files
	cacheID, scope := cacheOf(in)
	ch := &review.Change{
		Repository: in.Repository, CacheID: cacheID, CacheScope: scope,
		Title: in.Title, Body: in.Body, Base: in.Base, Head: in.Head,
		Diff: files, DiffTruncated: parsed.Truncated || in.DiffTruncated,
		Config: cfg, ConfigSource: source, OpenSnapshot: in.OpenSnapshot,
	}
	for _, f := range files {
		if f.NewPath == repoconfig.FileName || f.OldPath == repoconfig.FileName {
			ch.HeadConfigChanged = true
		}
	}
	opts := review.Options{Gate: p.opts.Gate, Builtins: p.opts.Builtins, TempDir: p.opts.TempDir, SnapshotCaps: p.opts.Caps,
		Evidence: p.opts.Evidence, MaxEvidenceRuns: p.opts.MaxEvidenceRuns}
	if p.opts.Tests != nil && (len(cfg.Tests.Command) > 0 || in.Tests) {
		opts.Tests = p.opts.Tests
	}
	if p.opts.Model != nil {
		model, err := p.opts.Model()
		if err != nil {
			return nil, fmt.Errorf("model step: %w", err)
		}
		opts.Reviewer = model
		if model != nil && in.SinceSHA != "" {
			incr := parsed.Incremental
			if in.Parsed == nil {
				incr, _, err = review.ParseDiff(bytes.NewReader(in.IncrementalDiff), diff.Options{})
				if err != nil {
					return nil, err
				}
			}
			opts.Reviewer = incrementalModel{inner: model, files: incr, since: in.SinceSHA}
		}
	}
	rep, err := review.Run(ctx, ch, opts)
	if errors.Is(err, repoconfig.ErrInvalid) {
		return configProblem(err.Error()), nil
	}
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// cacheOf is a review's dependency cache and scope. The cache is the repository's; a
// fork's pull requests run their author's code, so they get a cache of their own. Within
// it, the pull request is the scope: its installs are never offered to another pull
// request, and it reads only its own entries and the default branch's (which the App,
// reviewing pull requests only, does not write).
func cacheOf(in ReviewInput) (id, scope string) {
	id = "github:" + in.Repository
	if in.Fork {
		id += "#fork:" + in.Author
	}
	return id, "pr:" + strconv.Itoa(in.Number)
}

// Rechecker returns what re-checks an earlier review's model comments on in's head: their
// evidence, run again over the head's tree with the install step and cache of the review's
// own runs, at most model.max_evidence_runs of them. Nil when no evidence runs (no engine,
// model.evidence: off, an unusable base configuration).
func (p *PipelineReviewer) Rechecker(in ReviewInput) review.Rechecker {
	if p.opts.Evidence == nil || in.ConfigError != "" {
		return nil
	}
	cfg, _, err := review.BaseConfig(in.Config, in.Base.SHA)
	if err != nil {
		return nil
	}
	cacheID, scope := cacheOf(in)
	return review.RecheckerFor(p.opts.Evidence, cfg, evidence.Target{Revision: in.Head.SHA, Open: in.OpenSnapshot},
		cacheID, scope, p.opts.MaxEvidenceRuns)
}

// configProblem is the review of a change whose base configuration is unusable: nothing
// ran, the check is neutral (not green, not red), and the summary says why.
func configProblem(why string) *review.Report {
	return review.NotReviewed("not reviewed: the configuration is unusable",
		"not reviewed: "+why+" (fix it on the base branch; a pull request cannot change its own review)")
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
			Note: "nothing reviewable changed since " + review.ShortSHA(m.since)}, nil
	}
	in.Diff, in.Index = files, diff.NewIndex(files)
	return m.inner.Review(ctx, in)
}

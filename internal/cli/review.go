package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/evidence"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/sandbox"
)

type reviewFlags struct {
	base       string
	head       string
	filterMode gate.Mode
	format     string
	color      string
	failOn     string
	tests      bool
	parallel   int
	model      modelFlags
	// previous is an earlier report (--previous) whose open findings are re-checked.
	previous string
	// egressAllow adds to aster.yaml's egress.allow (--egress-allow).
	egressAllow []string
}

func newReviewCmd(g *globals) *cobra.Command {
	f := &reviewFlags{}
	cmd := &cobra.Command{
		Use:   "review [--base REF] [--head REF] [flags] [PATH]",
		Short: "Review a local git change: static-analysis gate in sandboxes, tests, model; print Markdown, JSON or SARIF",
		Long: `Review what HEAD (or --head) changed since its merge base with --base, in the
git repository at PATH (default: the current directory). No GitHub needed.

The configuration is .aster.yml from the BASE revision: a change cannot alter
how it is reviewed (an edit to it is reported, not obeyed). The head revision
is taken with git archive, so untracked files and .git never reach a sandbox;
ignored paths, lockfiles, generated and binary files, symlinks and files over
the size limit are left out and listed. Each analyzer (gitleaks, shellcheck,
Aster's taint engines, bandit, Aster's ast-grep rules, gosec, eslint,
actionlint, tfsec, kics, cppcheck, flawfinder, semgrep when the image has it
and the repository has .semgrep/ rules, and any added in .aster.yml) runs in
its own sandbox: no network, capped memory, CPU, processes and time. A
changed file none of them reads is listed as not analysed. Findings
are marked by the diff-aware filter (--filter-mode): added lines (default),
diff context, changed files, or all.

Exit status: 0 nothing at or above --fail-on on the change; 1 something is,
or the review itself failed (said on stderr); 3 incomplete (an analyzer or
the tests could not finish, nothing failed); 2 bad flags, revisions or
.aster.yml; 126 no sandbox engine or no sandbox image.

With a model configured (ASTER_LLM_PROVIDER, ASTER_LLM_MODEL, ASTER_LLM_API_KEY,
or the llm: section of aster.yaml), the diff, findings and test summary go
to it as framed data with secrets redacted, within a token and cost budget;
its comments are anchored to lines of the diff and sanitised. --agentic lets
it run the tests or a command in a sandbox to check its claims.

--previous REPORT.json (an earlier --format json report of the same branch)
re-checks the findings that review left open, as the GitHub App does on each
push: a finding whose analyzer ran again and no longer reports it is resolved,
one reported again (or not re-checked) is still open, the rest are new. The
report's "lifecycle" (JSON) and its "Since" section (Markdown) list them.`,
		Example: `  aster review
  aster review --base main --head feature ./repo
  aster review --filter-mode file --format json > report.json
  aster review --format sarif --fail-on never > aster.sarif
  aster review --tests --fail-on warning
  aster review --previous before.json   # before.json: an earlier --format json report`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runReview(cmd, g, f, dir)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.base, "base", "", "base revision (default: origin/HEAD, main or master, else HEAD~1)")
	fl.StringVar(&f.head, "head", "", "head revision (default HEAD)")
	fl.Var(&f.filterMode, "filter-mode", "which findings are reported: added, diff_context, file, nofilter (default from .aster.yml, else added)")
	// The zero mode prints as "added"; the usage already says where the default comes from.
	fl.Lookup("filter-mode").DefValue = ""
	fl.StringVar(&f.format, "format", review.FormatMarkdown, "output: markdown, json, sarif")
	fl.StringVar(&f.color, "color", colorAuto, "Markdown on a terminal: auto (rendered with colour on a terminal, plain Markdown when piped; NO_COLOR drops the colour), always, never")
	fl.StringVar(&f.failOn, "fail-on", "", "least severity that fails: error, warning, note, never (default from .aster.yml, else error)")
	fl.BoolVar(&f.tests, "tests", false, "also run the repository's tests in a sandbox (tests.command in .aster.yml, or detected)")
	parallelVar(fl, &f.parallel, "analyzers run at once")
	egressAllowVar(fl, &f.egressAllow)
	fl.StringVar(&f.previous, "previous", "", "an earlier JSON report whose open findings are re-checked: resolved, still open, new")
	addModelFlags(fl, &f.model)
	return cmd
}

func runReview(cmd *cobra.Command, g *globals, f *reviewFlags, dir string) error {
	switch f.format {
	case review.FormatMarkdown, review.FormatJSON, review.FormatSARIF:
	default:
		return usageErr("--format %q: want markdown, json or sarif", f.format)
	}
	switch f.color {
	case colorAuto, colorAlways, colorNever:
	default:
		return usageErr("--color %q: want auto, always or never", f.color)
	}
	render := renderMode(g.stdio.Stdout, f.color, g.stdio.Getenv)
	if f.failOn != "" {
		if _, err := review.ParseFailOn(f.failOn); err != nil {
			return usageErr("--fail-on: %v (or never)", err)
		}
	}
	if err := checkParallel(f.parallel); err != nil {
		return err
	}
	var prev *review.Report
	if f.previous != "" {
		var err error
		if prev, err = readPreviousReport(f.previous); err != nil {
			return usageErr("--previous: %v", err)
		}
	}
	c, err := g.load(cmd)
	if err != nil {
		return err
	}
	if err := checkModelFlags(c, g.stdio.Getenv, f.model); err != nil {
		return err
	}
	if _, err := c.SandboxLimits(); err != nil {
		return usageErr("%v", err)
	}
	log := g.logger(c)
	ctx := cmd.Context()
	stderr := g.stdio.Stderr
	egressPol, err := egressPolicy(c, f.egressAllow, log)
	if err != nil {
		return err
	}

	ch, err := review.FromGit(ctx, review.GitOptions{Dir: dir, Base: f.base, Head: f.head, Diff: diff.Options{}})
	if err != nil {
		if errors.Is(err, repoconfig.ErrInvalid) || errors.Is(err, review.ErrGit) {
			return usageErr("%v", err)
		}
		return &exitError{code: ExitFailure, err: err}
	}
	if ch.NothingToReview() {
		// No sandbox engine is needed to say so, and none is asked.
		rep, err := review.Run(ctx, ch, review.Options{FilterMode: f.filterMode, FailOn: f.failOn})
		if err == nil && prev != nil {
			rep.Lifecycle, err = review.ClassifyLifecycle(ctx, prev, rep, review.LifecycleOptions{})
		}
		if err == nil {
			err = writeReport(g.stdio.Stdout, rep, f.format, render, review.Options{})
		}
		if err != nil {
			return &exitError{code: ExitFailure, err: err}
		}
		fmt.Fprintf(stderr, "aster: nothing to review: %s changes no file since its merge base with %s\n", ch.Head.Ref, ch.Base.Ref)
		return nil
	}

	progress := newReviewProgress(stderr)
	rg, err := openReviewGate(ctx, c, log, f.parallel, progress.event)
	if err != nil {
		return err
	}
	defer rg.close()
	mgr, image, limits := rg.mgr, rg.image, rg.limits
	runner := rg.runner
	opts := review.Options{
		Gate:       runner,
		FilterMode: f.filterMode,
		FailOn:     f.failOn,
		Stage:      progress.stage,
	}
	if f.tests {
		tests, _, err := testRunner(c, egressPol, mgr, log)
		if err != nil {
			return err
		}
		opts.Tests = &review.SandboxTests{Sandbox: mgr, Image: image, Limits: limits, Runner: tests}
	}
	if opts.Reviewer, err = newReviewer(c, log, g.stdio.Getenv, f.model, reviewSandbox{sandbox: mgr, image: image, limits: limits, change: ch}); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return usageErr("%v", err)
	}
	if opts.Reviewer != nil {
		if opts.Evidence, opts.MaxEvidenceRuns, err = evidenceEngine(c, g.stdio.Getenv, egressPol, mgr, image, limits, log); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "aster: reviewing %s...%s (%d files changed) in %s\n", ch.Base.Ref, ch.Head.Ref, len(ch.Diff), ch.Repository)
	rep, err := review.Run(ctx, ch, opts)
	if err != nil {
		if errors.Is(err, repoconfig.ErrInvalid) {
			return usageErr("%v", err)
		}
		return &exitError{code: ExitFailure, err: err}
	}
	if prev != nil {
		// The earlier report's model comments are re-checked by running their evidence
		// again on this head, as the App does.
		var rc review.Rechecker
		if opts.Evidence != nil {
			rc = review.RecheckerFor(opts.Evidence, ch.Config, evidence.Target{Revision: ch.Head.SHA, Open: ch.OpenSnapshot},
				ch.CacheID, ch.CacheScope, opts.MaxEvidenceRuns)
		}
		if rep.Lifecycle, err = review.ClassifyLifecycle(ctx, prev, rep, review.LifecycleOptions{Rechecker: rc}); err != nil {
			return &exitError{code: ExitFailure, err: err}
		}
	}
	if err := writeReport(g.stdio.Stdout, rep, f.format, render, opts); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	fmt.Fprintf(stderr, "aster: %s: %d finding(s) on the change, %d outside the diff; %s\n", rep.Conclusion, rep.Summary.Reported, rep.Summary.OutsideDiff, rep.Model.Note)
	if code := rep.Conclusion.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// reviewGate is the sandbox side of `aster review`: the runtime, the manager
// and the gate's runner over them, built the same way for every command that
// runs the gate (review, bench review).
type reviewGate struct {
	runner *gate.Runner
	mgr    *sandbox.Manager
	image  string
	limits sandbox.Limits
	close  func()
}

// openReviewGate opens the configured runtime, checks it and the image, and
// returns the gate's runner. Its errors are exitErrors (126 without an engine).
func openReviewGate(ctx context.Context, c config.Config, log *slog.Logger, parallel int, progress func(gate.Event)) (*reviewGate, error) {
	limits, err := c.SandboxLimits()
	if err != nil {
		return nil, usageErr("%v", err)
	}
	rt, closeRT, err := startRuntime(c, log, ExitSandbox)
	if err != nil {
		return nil, err
	}
	fail := func(code int, err error) (*reviewGate, error) {
		closeRT()
		return nil, &exitError{code: code, err: err}
	}
	if err := rt.Check(ctx); err != nil {
		return fail(ExitSandbox, err)
	}
	image := config.DefaultImage
	if len(c.Images) > 0 {
		image = c.Images[0]
	}
	if _, err := rt.ImageInfo(ctx, image); err != nil {
		return fail(ExitSandbox, err)
	}
	mgr, err := newManager(c, rt, sandbox.ManagerOptions{Defaults: limits, MaxConcurrent: parallel, QueueSize: 64, Logger: log}, ExitFailure)
	if err != nil {
		closeRT()
		return nil, err
	}
	runner := gate.NewRunner(mgr, gate.RunnerOptions{Image: image, Limits: limits, Parallel: parallel, Progress: progress, Logger: log})
	return &reviewGate{runner: runner, mgr: mgr, image: image, limits: limits, close: closeRT}, nil
}

// writeReport writes rep in format; Markdown is rendered for the terminal when render
// says so (renderMode).
func writeReport(w io.Writer, rep *review.Report, format, render string, opts review.Options) error {
	switch format {
	case review.FormatJSON:
		return review.WriteJSON(w, rep)
	case review.FormatSARIF:
		return review.WriteSARIF(w, rep, review.SARIFOptions{ToolVersion: Version(), Analyzers: gate.Builtins()})
	}
	out, flush := markdownTo(w, render)
	if err := review.WriteMarkdown(out, rep); err != nil {
		return err
	}
	return flush()
}

// reviewProgress prints one line per stage and per analyzer on stderr.
type reviewProgress struct {
	mu sync.Mutex
	w  io.Writer
}

func newReviewProgress(w io.Writer) *reviewProgress { return &reviewProgress{w: w} }

func (p *reviewProgress) stage(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "aster: %s…\n", name)
}

func (p *reviewProgress) event(e gate.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !e.Done {
		fmt.Fprintf(p.w, "aster:   %s running\n", e.Analyzer)
		return
	}
	r := e.Result
	line := fmt.Sprintf("aster:   %s %s", r.Name, r.Status)
	if r.Status == gate.StatusOK {
		line += fmt.Sprintf(", %d finding(s)", r.Findings)
	}
	if r.Reason != "" {
		line += ": " + r.Reason
	}
	fmt.Fprintf(p.w, "%s (%.1fs)\n", line, float64(r.DurationMS)/1000)
}

// readPreviousReport reads the report named by --previous.
func readPreviousReport(path string) (*review.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return review.ReadReport(f)
}

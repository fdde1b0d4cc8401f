package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate/rules/astgrep"
	"github.com/asterhq/aster/internal/gate/taint"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/textclip"
	"github.com/asterhq/aster/internal/units"
)

// Sandbox runs one spec in a fresh sandbox. *sandbox.Manager satisfies it, and
// so can a client of a remote `aster sandbox serve`.
type Sandbox interface {
	Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error)
}

var _ Sandbox = (*sandbox.Manager)(nil)

// Status is how one analyzer's run ended.
type Status string

// Analyzer statuses. Only ok means its findings are complete.
const (
	StatusOK      Status = "ok"      // ran and its output was read
	StatusFailed  Status = "failed"  // bad exit code, unreadable output, OOM, output limit
	StatusTimeout Status = "timeout" // killed at its deadline
	StatusSkipped Status = "skipped" // nothing to analyse, or an optional tool is absent
	StatusError   Status = "error"   // the sandbox could not run it (engine, image, admission)
)

// AnalyzerResult reports one analyzer's run.
type AnalyzerResult struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Version is the tool's version in the image it ran in, from the
	// image's VersionsFile; empty when the image does not say.
	Version string `json:"version,omitempty"`
	// Reason explains every status but ok, in one line.
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Findings   int    `json:"findings"`
	// TargetFiles is the number of files the analyzer was given (0 for
	// analyzers that scan the whole snapshot).
	TargetFiles int `json:"target_files"`
	// ExitCode is the tool's own exit status when it ran to its end, and -1
	// when it did not: never started (error, most skips), or stopped by the
	// sandbox (timeout, out of memory, output limit, killed). So "error" and
	// "timeout" always carry -1. An "ok" run may carry a non-zero status
	// that the analyzer declares as success (most tools exit 1 when they
	// find something); a "failed" run carries the status that failed it, or
	// the one of a run whose report could not be read; a "skipped" run of
	// an optional tool carries 127 (not installed).
	ExitCode int    `json:"exit_code"`
	RunID    string `json:"run_id,omitempty"`
	// ToolErrors are problems the tool itself reported (files it could not
	// parse); Dropped and Suppressed come from the reader.
	ToolErrors []string `json:"tool_errors,omitempty"`
	Dropped    int      `json:"dropped,omitempty"`
	Suppressed int      `json:"suppressed,omitempty"`
	// Notices are the tool's warnings about files of its run (a file a
	// taint engine left out, and why).
	Notices []finding.Notice `json:"notices,omitempty"`
	// Stats are the tool's own account of its run (the taint engines':
	// files, time, peak memory).
	Stats *finding.RunStats `json:"stats,omitempty"`
	// Judged are the sinks a taint engine judged, flagged or not: where
	// its category's rules without data flow are superseded.
	Judged finding.Judged `json:"-"`
	// Superseded counts findings of this analyzer left out of the review
	// because another analyzer follows data into their category (Bandit's
	// rules without data flow, where taint-python ran).
	Superseded int `json:"superseded,omitempty"`
	// SkippedFiles counts target files not given to the tool, or whose
	// results were set aside because it did not judge them, per reason (a
	// shell it does not read: "zsh"). Reason then says so, even for ok.
	SkippedFiles map[string]int `json:"skipped_files,omitempty"`
	// Declined are the target files set aside after their start was read
	// (a shell the tool does not read, a YAML file kics does not analyse):
	// the review does not count them as analysed by this tool.
	Declined []string `json:"-"`
	// Stderr is the tail of the tool's stderr when it did not succeed.
	Stderr string `json:"stderr,omitempty"`
	// Unavailable is set on an error the sandbox layer classed as passing
	// (sandbox.ErrUnavailable: the engine unreachable; sandbox.ErrBusy: no
	// slot within the queue's wait): the analyzer never ran, and a later run
	// may succeed, so the App reviews again rather than post a review that
	// says it could not finish. Not kept in the report.
	Unavailable bool `json:"-"`
	// Batches is the number of sandboxes the analyzer ran in when its files
	// were given in batches (Analyzer.BatchFiles); 0 for one run.
	Batches int `json:"batches,omitempty"`
}

// Result is the gate's output: every finding, and every analyzer's status.
type Result struct {
	Findings []finding.Finding `json:"findings"`
	// Superseded are the findings taken out by AnalyzerResult.Superseded,
	// kept for measurement (aster bench review scores Bandit alone).
	Superseded []finding.Finding `json:"superseded,omitempty"`
	Analyzers  []AnalyzerResult  `json:"analyzers"`
	DurationMS int64             `json:"duration_ms"`
}

// Complete reports whether every analyzer ended ok or skipped.
func (r Result) Complete() bool {
	for _, a := range r.Analyzers {
		if a.Status != StatusOK && a.Status != StatusSkipped {
			return false
		}
	}
	return true
}

// Event is a progress notification.
type Event struct {
	Analyzer string
	// Done is false when the analyzer starts and true when it has finished;
	// Result is set then.
	Done   bool
	Result AnalyzerResult
}

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	// Image is used by analyzers that name none.
	Image string
	// Limits are the base limits of every analyzer's sandbox; an analyzer's
	// own timeout and memory replace those two. Zero fields take the
	// sandbox's defaults.
	Limits sandbox.Limits
	// Parallel bounds analyzers running at once (default 4).
	Parallel int
	// Progress, when set, is called as analyzers start and finish, from
	// several goroutines at once.
	Progress func(Event)
	Logger   *slog.Logger
}

// Runner runs analyzers, each in its own sandbox.
type Runner struct {
	sb   Sandbox
	opts RunnerOptions
	log  *slog.Logger
}

// NewRunner returns a Runner over sb.
func NewRunner(sb Sandbox, opts RunnerOptions) *Runner {
	if opts.Parallel <= 0 {
		opts.Parallel = 4
	}
	if opts.Image == "" {
		opts.Image = sandbox.DefaultImage
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{sb: sb, opts: opts, log: log}
}

// Request is one gate run.
type Request struct {
	Snapshot  *Snapshot
	Analyzers []Analyzer
	// Changed, when non-nil, limits the files given to analyzers that take a
	// file list ({files} or input files0) to these paths. Analyzers that
	// scan the whole tree still do.
	Changed []string
	// Policy, when set, is the review's path-class policy: a file whose
	// every finding of an analyzer it would suppress (tests, fixtures,
	// vendored and generated code by default) is not given to that
	// analyzer, when the analyzer takes a file list. The analyzer's
	// SkippedFiles count them per class.
	Policy *Policy
}

// Defaults of one analyzer, where its definition (built in or in .aster.yml)
// names no timeout or memory of its own.
const (
	DefaultAnalyzerTimeout = 2 * time.Minute
	DefaultAnalyzerMemory  = "1g"
)

// Output caps of an analyzer's sandbox: report formats are one JSON document,
// so a cut-off stream is unreadable; keep far more than a log would need.
const (
	analyzerOutputBytes  = 32 << 20
	analyzerCeilingBytes = 64 << 20
	stderrTailBytes      = 2 << 10
	// Argv caps of the init protocol, with room for the command itself.
	maxArgvFiles = 3500
	maxArgvBytes = 200 << 10
)

// Run runs every analyzer of req. It never fails as a whole: an analyzer that
// fails, times out or cannot be started is reported in its AnalyzerResult and
// the others go on. Findings are ordered most severe first, then by place,
// and one problem reported by two analyzers on one line is one finding.
func (r *Runner) Run(ctx context.Context, req Request) Result {
	start := time.Now()
	results := make([]AnalyzerResult, len(req.Analyzers))
	found := make([][]finding.Finding, len(req.Analyzers))
	sem := make(chan struct{}, r.opts.Parallel)
	var wg sync.WaitGroup
	var changed map[string]bool
	if req.Changed != nil {
		changed = make(map[string]bool, len(req.Changed))
		for _, p := range req.Changed {
			changed[p] = true
		}
	}
	// Each image's analyzer versions are read once, beside the analyzers.
	var images []string
	for _, a := range req.Analyzers {
		if im := r.image(a); !slices.Contains(images, im) {
			images = append(images, im)
		}
	}
	// An analyzer of a Go module waits for its image's versions (the Go it
	// has); the first to ask reads them.
	imageVersions := make([]func() map[string]string, len(images))
	for i, image := range images {
		imageVersions[i] = sync.OnceValue(func() map[string]string { return r.readVersions(ctx, image) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !acquire(ctx, sem) {
				return
			}
			defer func() { <-sem }()
			imageVersions[i]()
		}()
	}
	for i, a := range req.Analyzers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !acquire(ctx, sem) {
				results[i] = AnalyzerResult{Name: a.Name, Status: StatusError, Reason: "cancelled: " + ctx.Err().Error(), ExitCode: -1}
				return
			}
			defer func() { <-sem }()
			r.progress(Event{Analyzer: a.Name})
			versions := imageVersions[slices.Index(images, r.image(a))]
			results[i], found[i] = r.runOne(ctx, a, req.Snapshot, changed, req.Policy, versions)
			r.progress(Event{Analyzer: a.Name, Done: true, Result: results[i]})
		}()
	}
	wg.Wait()
	for i, a := range req.Analyzers {
		results[i].Version = imageVersions[slices.Index(images, r.image(a))]()[a.Name]
	}
	out := Result{Findings: []finding.Finding{}, Analyzers: results}
	for _, fs := range found {
		out.Findings = append(out.Findings, fs...)
	}
	out.Findings, out.Superseded = supersede(out.Analyzers, out.Findings)
	var taken []finding.Finding
	out.Findings, taken = supersedeJS(out.Analyzers, out.Findings, taintJSTargets(req.Analyzers, changed))
	out.Superseded = append(out.Superseded, taken...)
	finding.Sort(out.Findings)
	out.Findings = merge(out.Findings, Names(req.Analyzers))
	if err := fingerprint(req.Snapshot, out.Findings); err != nil {
		r.log.Warn("findings fingerprinted by message only", "err", err)
	}
	sortReported(out.Findings) // a finding made a note moves down
	out.DurationMS = time.Since(start).Milliseconds()
	return out
}

// acquire takes one of sem's slots, or reports false when ctx ends first.
func acquire(ctx context.Context, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *Runner) progress(e Event) {
	if r.opts.Progress != nil {
		r.opts.Progress(e)
	}
}

// targets returns the snapshot files an analyzer applies to.
func targets(a Analyzer, snap *Snapshot, changed map[string]bool) []string {
	globs, _ := CompileGlobs(a.Files)
	exclude, _ := CompileGlobs(a.Exclude)
	var out []string
	for _, f := range snap.Files() {
		if changed != nil && !changed[f] || exclude.Match(f) {
			continue
		}
		if len(globs) == 0 || globs.Match(f) {
			out = append(out, f)
		}
	}
	return out
}

func anyMatch(globs []string, files []string) bool {
	gs, _ := CompileGlobs(globs)
	return slices.ContainsFunc(files, gs.Match)
}

func (r *Runner) runOne(ctx context.Context, a Analyzer, snap *Snapshot, changed map[string]bool, policy *Policy, versions func() map[string]string) (AnalyzerResult, []finding.Finding) {
	t0 := time.Now()
	res := AnalyzerResult{Name: a.Name, ExitCode: -1}
	done := func(st Status, reason string) (AnalyzerResult, []finding.Finding) {
		res.Status, res.Reason = st, reason
		if st == StatusError || st == StatusTimeout {
			res.ExitCode = -1 // see AnalyzerResult.ExitCode: the tool did not end by itself
		}
		res.DurationMS = time.Since(t0).Milliseconds()
		return res, nil
	}
	if err := a.Validate(); err != nil {
		return done(StatusError, err.Error())
	}
	if len(a.Requires) > 0 && !anyMatch(a.Requires, snap.Files()) {
		return done(StatusSkipped, "no file matches "+strings.Join(a.Requires, ", "))
	}
	var files []string
	if a.usesFiles() || len(a.Files) > 0 || a.TargetsOnly {
		files = targets(a, snap, changed)
		if len(files) == 0 {
			what := "the snapshot"
			if changed != nil {
				what = "the changed files"
			}
			if len(a.Files) > 0 {
				return done(StatusSkipped, "no file of "+what+" matches "+strings.Join(a.Files, ", "))
			}
			return done(StatusSkipped, "no file of "+what+" to analyse")
		}
	}
	if a.usesFiles() && policy != nil {
		kept := files[:0:0]
		for _, f := range files {
			if c, ok := policy.SuppressesAll(a.Name, f); ok {
				if res.SkippedFiles == nil {
					res.SkippedFiles = map[string]int{}
				}
				res.SkippedFiles[policySkipReason(c)]++
				continue
			}
			kept = append(kept, f)
		}
		if files = kept; len(files) == 0 {
			return done(StatusSkipped, "skipped: "+skippedText(res.SkippedFiles))
		}
	}
	if a.GoModule {
		if need, have := needsGo(snap, versions()["go"]); need != "" {
			return done(StatusSkipped, fmt.Sprintf("needs go %s: the module's go.mod declares it and the image has go %s (GOTOOLCHAIN=local, no download); its Go packages are not type-checked", need, have))
		}
	}
	var undeclared []string
	if len(a.Shells) > 0 && len(files) > 0 {
		kept, undecl, declined, skipped, err := shellTargets(snap, files, a.Shells)
		if err != nil {
			return done(StatusError, err.Error())
		}
		files, undeclared, res.SkippedFiles, res.Declined = kept, undecl, skipped, declined
		if len(files) == 0 {
			return done(StatusSkipped, "skipped: "+skippedText(res.SkippedFiles))
		}
	}
	if a.Sniff != nil && len(files) > 0 {
		kept, declined, err := a.Sniff.targets(snap, files)
		if err != nil {
			return done(StatusError, err.Error())
		}
		if len(declined) > 0 {
			if res.SkippedFiles == nil {
				res.SkippedFiles = map[string]int{}
			}
			res.SkippedFiles[a.Sniff.Reason] += len(declined)
			files, res.Declined = kept, append(res.Declined, declined...)
		}
		if len(files) == 0 {
			return done(StatusSkipped, "skipped: "+skippedText(res.SkippedFiles))
		}
	}
	if a.usesFiles() || a.TargetsOnly {
		res.TargetFiles = len(files)
	}
	// One sandbox, or one per batch of files: each batch's report is read
	// under the output cap by itself, and the findings of all are kept
	// within the reader's one bound (finding.Merge).
	batches := batchFiles(a, files)
	parts := make([]finding.ReadResult, 0, len(batches))
	for i, batch := range batches {
		rr, st, reason := r.runSandbox(ctx, a, snap, batch, &res)
		if st != "" {
			if len(batches) > 1 {
				reason = fmt.Sprintf("batch %d of %d (%d files): %s", i+1, len(batches), len(batch), reason)
			}
			return done(st, reason)
		}
		parts = append(parts, rr)
	}
	rr := parts[0]
	if len(parts) > 1 {
		rr = finding.Merge(0, parts...)
		res.Batches = len(parts)
	}
	if a.Severity != "" {
		for i := range rr.Findings {
			rr.Findings[i].Severity = a.Severity
		}
	}
	if a.Format == finding.FormatShellcheck {
		if res.SkippedFiles == nil {
			res.SkippedFiles = map[string]int{}
		}
		rr.Findings = dropUnjudged(rr.Findings, undeclared, res.SkippedFiles)
	}
	if len(res.SkippedFiles) > 0 {
		res.Reason = "skipped: " + skippedText(res.SkippedFiles)
	} else {
		res.SkippedFiles = nil
	}
	res.ToolErrors, res.Dropped, res.Suppressed = rr.ToolErrors, rr.Dropped, rr.Suppressed
	res.Notices, res.Stats, res.Judged = rr.Notices, rr.Stats, rr.Judged
	res.Findings = len(rr.Findings)
	res.Status = StatusOK
	res.DurationMS = time.Since(t0).Milliseconds()
	return res, rr.Findings
}

// runSandbox runs a over files in one sandbox and reads its report. A run
// that did not end ok returns its status and reason (and sets res's exit
// code and stderr tail); an ok run returns status "".
func (r *Runner) runSandbox(ctx context.Context, a Analyzer, snap *Snapshot, files []string, res *AnalyzerResult) (finding.ReadResult, Status, string) {
	fail := func(st Status, reason string) (finding.ReadResult, Status, string) {
		return finding.ReadResult{}, st, reason
	}
	spec, err := r.spec(a, files)
	if err != nil {
		return fail(StatusFailed, err.Error())
	}
	open := snap.Open
	if a.TargetsOnly {
		open = func() (io.ReadCloser, error) { return snap.OpenOnly(files) }
	}
	tr, err := open()
	if err != nil {
		return fail(StatusError, "open snapshot: "+err.Error())
	}
	defer tr.Close()
	spec.Workspace = sandbox.Workspace{Tar: tr, Filtered: true}
	sres, runErr := r.sb.Run(ctx, spec)
	res.RunID = sres.ID
	res.ExitCode = sres.ExitCode
	r.log.Debug("analyzer finished", "analyzer", a.Name, "run", sres.ID, "status", sres.Status, "exit", sres.ExitCode)
	stderrTail := func() string { return tail(sres.Stderr.Data, stderrTailBytes) }
	switch sres.Status {
	case sandbox.StatusOK, sandbox.StatusExitNonzero:
	case sandbox.StatusTimeout:
		res.ExitCode = -1
		res.Stderr = stderrTail()
		return fail(StatusTimeout, fmt.Sprintf("killed after its %s limit", time.Duration(spec.Limits.TimeoutMS)*time.Millisecond))
	case sandbox.StatusOOM:
		res.ExitCode = -1
		res.Stderr = stderrTail()
		return fail(StatusFailed, fmt.Sprintf("ran out of its %s of memory", units.FormatBytes(spec.Limits.MemoryBytes)))
	case sandbox.StatusOutputLimit:
		res.ExitCode = -1
		return fail(StatusFailed, "wrote more output than the sandbox allows")
	case sandbox.StatusKilled:
		res.ExitCode = -1
		res.Stderr = stderrTail()
		return fail(StatusFailed, "killed: "+textclip.OneLine(sres.Error, maxReasonBytes))
	default:
		reason := sres.Error
		if runErr != nil {
			reason = runErr.Error()
			res.Unavailable = errors.Is(runErr, sandbox.ErrUnavailable) || errors.Is(runErr, sandbox.ErrBusy)
		}
		if reason == "" {
			reason = "the sandbox could not run the analyzer"
		}
		return fail(StatusError, textclip.OneLine(reason, maxReasonBytes))
	}
	if sres.ExitCode == 127 && a.Optional {
		tool := a.Command[0]
		switch {
		case a.Input == InputAsterRules:
			tool = "ast-grep" // run through sh, which unpacks the rule pack first
		case tool == "sh" || tool == "xargs":
			tool = a.Name // the built-in analyzers run their tool through one
		}
		return fail(StatusSkipped, fmt.Sprintf("%s is not installed in image %s", tool, spec.Image))
	}
	if !a.okExit(sres.ExitCode) {
		res.Stderr = stderrTail()
		return fail(StatusFailed, fmt.Sprintf("exit status %d", sres.ExitCode))
	}
	if sres.Stdout.Truncated {
		return fail(StatusFailed, fmt.Sprintf("its report is larger than %s", units.FormatBytes(analyzerOutputBytes)))
	}
	rr, err := finding.Read(a.Format, bytes.NewReader(sres.Stdout.Data), finding.ReadOptions{Analyzer: a.Name, Root: "/work"})
	if err != nil {
		res.Stderr = stderrTail()
		return fail(StatusFailed, "unreadable "+string(a.Format)+" output: "+textclip.OneLine(err.Error(), maxReasonBytes))
	}
	return rr, "", ""
}

// policySkipReason is how the files of class c that a policy would take
// every finding of are counted in an analyzer's SkippedFiles.
func policySkipReason(c Class) string {
	return "in " + string(c) + ", whose findings the path-class policy suppresses"
}

// batchFiles splits an analyzer's target files into the batches it runs
// over, one sandbox each: a.BatchFiles at most per batch for a tool given its
// files on stdin; all of them at once otherwise.
func batchFiles(a Analyzer, files []string) [][]string {
	n := a.BatchFiles
	if n <= 0 || a.Input != InputFiles0 || len(files) <= n {
		return [][]string{files}
	}
	var out [][]string
	for len(files) > 0 {
		k := min(n, len(files))
		out = append(out, files[:k:k])
		files = files[k:]
	}
	return out
}

// spec builds the sandbox spec of an analyzer over its target files.
func (r *Runner) spec(a Analyzer, files []string) (sandbox.Spec, error) {
	limits := r.opts.Limits
	limits.TimeoutMS = DefaultAnalyzerTimeout.Milliseconds()
	if a.Timeout != "" {
		d, _ := units.ParseDuration(a.Timeout)
		limits.TimeoutMS = d.Milliseconds()
	}
	mem := DefaultAnalyzerMemory
	if a.Memory != "" {
		mem = a.Memory
	}
	limits.MemoryBytes, _ = units.ParseBytes(mem)
	if a.TmpSize != "" {
		limits.TmpBytes, _ = units.ParseBytes(a.TmpSize)
	}
	limits.OutputBytes = analyzerOutputBytes
	limits.OutputCeilingBytes = analyzerCeilingBytes
	image := r.image(a)
	argv := make([]string, 0, len(a.Command)+len(files))
	for _, arg := range a.Command {
		if arg == FilesPlaceholder {
			for _, f := range files {
				argv = append(argv, safeArg(f))
			}
			continue
		}
		argv = append(argv, arg)
	}
	if n, size := len(argv), argBytes(argv); n > maxArgvFiles || size > maxArgvBytes {
		return sandbox.Spec{}, fmt.Errorf("%d files (%d bytes) do not fit on a command line; use input: files0", len(files), size)
	}
	env := map[string]string{"HOME": "/tmp"}
	for k, v := range a.Env {
		env[k] = v
	}
	spec := sandbox.Spec{Image: image, Argv: argv, Env: env, Limits: limits}
	if a.Input == InputAsterRules {
		pack, err := astgrep.Tar(files)
		if err != nil {
			return sandbox.Spec{}, err
		}
		spec.Stdin = bytes.NewReader(pack)
	}
	if engine := a.taintEngine(); engine != "" {
		pack, err := taint.Tar(engine, files)
		if err != nil {
			return sandbox.Spec{}, err
		}
		spec.Stdin = bytes.NewReader(pack)
	}
	if a.Input == InputFiles0 {
		var b bytes.Buffer
		for _, f := range files {
			b.WriteString(safeArg(f))
			b.WriteByte(0)
		}
		spec.Stdin = &b
	}
	return spec, nil
}

// image is the image an analyzer runs in.
func (r *Runner) image(a Analyzer) string {
	if a.Image != "" {
		return a.Image
	}
	return r.opts.Image
}

// safeArg keeps a file name from being read as an option ("-rf" → "./-rf").
func safeArg(name string) string {
	if strings.HasPrefix(name, "-") {
		return "./" + name
	}
	return name
}

func argBytes(argv []string) int {
	n := 0
	for _, a := range argv {
		n += len(a) + 1
	}
	return n
}

// tail returns the last n bytes of b as valid UTF-8 text.
func tail(b []byte, n int) string {
	return strings.ToValidUTF8(strings.TrimSpace(textclip.Tail(string(b), n, "")), "\uFFFD")
}

// maxReasonBytes caps the one-line texts this package makes of errors and reasons.
const maxReasonBytes = 500

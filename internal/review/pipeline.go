package review

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/textclip"
	"github.com/asterhq/aster/internal/workspace"
)

// Options configure one review.
type Options struct {
	// Gate runs the analyzers; Builtins are the analyzers the repository
	// configuration adjusts (gate.Builtins() when nil).
	Gate     *gate.Runner
	Builtins []gate.Analyzer
	// FilterMode and FailOn override the repository configuration when set.
	// FailOn "never" never fails.
	FilterMode gate.Mode
	FailOn     string
	// Tests, when set, runs the repository's tests.
	Tests TestRunner
	// Reviewer is the model step; nil skips it with NoProviderNote.
	Reviewer Reviewer
	// Evidence runs the evidence of model comments (evidence.go); nil runs
	// none, so under model.evidence: required no model comment is posted.
	// MaxEvidenceRuns is the operator's ceiling on model.max_evidence_runs
	// (0: none).
	Evidence        EvidenceChecker
	MaxEvidenceRuns int
	// TempDir holds the spooled snapshots ("" is the system default).
	TempDir string
	// SnapshotCaps bound the analyzers' snapshot.
	SnapshotCaps workspace.Caps
	// SnapshotReadBytes bounds how much of the archive the snapshot reads
	// (0 is DefaultSnapshotReadBytes).
	SnapshotReadBytes int64
	// Stage, when set, is told as each step starts ("gate", "tests", "model").
	Stage func(name string)
}

// Run reviews a change. It fails only when the change cannot be reviewed at
// all (the snapshot cannot be read, an option is invalid); a failing
// analyzer, test run or model is reported in the Report instead.
func Run(ctx context.Context, ch *Change, opts Options) (*Report, error) {
	t0 := time.Now()
	cfg := ch.Config
	rep := &Report{
		Version:     ReportVersion,
		Repository:  ch.Repository,
		Base:        ch.Base,
		Head:        ch.Head,
		Config:      ConfigInfo{Source: ch.ConfigSource, HeadChanged: ch.HeadConfigChanged, Effective: cfg, Analyzers: []string{}},
		Analyzers:   []gate.AnalyzerResult{},
		Findings:    []gate.Marked{},
		Superseded:  []finding.Finding{},
		Notes:       []string{},
		DurationsMS: map[string]int64{},
		Files:       FilesInfo{Omitted: []OmittedFile{}, NotAnalysed: []NotAnalysedFile{}, DiffTruncated: ch.DiffTruncated},
	}
	if rep.Config.Source == "" {
		rep.Config.Source = "defaults"
	}
	if ch.HeadConfigChanged {
		rep.Notes = append(rep.Notes, fmt.Sprintf("this change edits %s; the edit is not obeyed: the configuration comes from the base revision", repoconfig.FileName))
	}
	mode := opts.FilterMode
	if mode == "" {
		mode = cfg.Mode()
	}
	rep.FilterMode = mode
	failOn, err := effectiveFailOn(cfg, opts.FailOn)
	if err != nil {
		return nil, err
	}
	rep.FailOn = string(failOn)
	if failOn == "" {
		rep.FailOn = "never"
	}
	builtins := opts.Builtins
	if builtins == nil {
		builtins = gate.Builtins()
	}
	analyzers, err := cfg.Resolve(builtins)
	if err != nil {
		return nil, err
	}
	policy, err := cfg.Policy()
	if err != nil {
		return nil, err
	}
	rep.Config.Analyzers = gate.Names(analyzers)
	if rep.Config.Analyzers == nil {
		rep.Config.Analyzers = []string{}
	}
	if len(ch.Uncommitted) > 0 {
		rep.Notes = append(rep.Notes, uncommittedNote(ch))
	}
	rep.Model = ModelReport{Status: ModelSkipped, Note: NoProviderNote, Comments: []Comment{}, DroppedComments: []DroppedComment{}, OmittedFiles: []OmittedFile{}}
	if ch.NothingToReview() {
		// Nothing changed: no snapshot, no sandbox, no model, and a report that says so
		// rather than an empty one that looks like a clean review.
		rep.Notes = append(rep.Notes, nothingNote(ch))
		rep.Model.Note = "nothing to review"
		rep.Snapshot = SnapshotInfo{Skipped: map[string]int{}, SkippedSample: []OmittedFile{}}
		rep.Summary = gate.Summarize(rep.Findings)
		rep.Conclusion = Success
		rep.DurationsMS["total"] = time.Since(t0).Milliseconds()
		return rep, nil
	}

	// Which changed files are reviewed.
	ignore := cfg.Ignore()
	var reviewed []*diff.File
	for _, f := range ch.Diff {
		reason := ""
		switch {
		case f.Status == diff.StatusDeleted:
			reason = ReasonDeleted
		case f.Binary:
			reason = ReasonBinary
		default:
			reason = Classify(f.Path(), ignore)
		}
		if reason == "" && f.Truncated {
			rep.Files.Omitted = append(rep.Files.Omitted, OmittedFile{Path: f.Path(), Reason: ReasonTruncated + " (partly reviewed)"})
		}
		if reason != "" {
			rep.Files.Omitted = append(rep.Files.Omitted, OmittedFile{Path: f.Path(), Reason: reason})
			continue
		}
		reviewed = append(reviewed, f)
	}
	rep.Files.Changed = len(ch.Diff)
	if ch.DiffTruncated {
		rep.Notes = append(rep.Notes, "the diff is larger than its cap: files past the cap are not reviewed")
	}

	// The analyzers' snapshot.
	opts.stage("snapshot")
	ts := time.Now()
	raw, err := ch.OpenSnapshot()
	if err != nil {
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	underReview := make(map[string]bool, len(reviewed))
	for _, f := range reviewed {
		underReview[f.Path()] = true
	}
	snap, snapPath, info, err := PrepareSnapshot(raw, opts.TempDir, SnapshotRules{Ignore: ignore, MaxFileBytes: cfg.MaxFileSize(), Caps: opts.SnapshotCaps, MaxReadBytes: opts.SnapshotReadBytes, Changed: underReview})
	cerr := raw.Close()
	if err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	defer os.Remove(snapPath)
	rep.Snapshot = info
	rep.DurationsMS["snapshot"] = time.Since(ts).Milliseconds()
	inSnap := make(map[string]bool, len(snap.Files()))
	for _, p := range snap.Files() {
		inSnap[p] = true
	}
	skippedIn := map[string]string{}
	for _, s := range info.SkippedSample {
		skippedIn[s.Path] = s.Reason
	}
	// A reviewed file that is not in the snapshot was left out of it (too
	// large, binary by content, generated header, or hidden by export-ignore).
	var kept []*diff.File
	var changed []string
	for _, f := range reviewed {
		if inSnap[f.Path()] {
			kept = append(kept, f)
			changed = append(changed, f.Path())
			continue
		}
		reason := skippedIn[f.Path()]
		if reason == "" && info.Unread != "" {
			reason = ReasonUnread
		}
		if reason == "" {
			reason = "not in the snapshot"
			if ch.HeadFiles != nil && slices.Contains(ch.HeadFiles, f.Path()) {
				reason = "left out of the snapshot (export-ignore in .gitattributes?)"
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s is in the head revision but not in its archive: a .gitattributes export-ignore hides it from the analyzers", workspace.Quote(f.Path())))
			}
		}
		if f.Status == diff.StatusAdded && len(f.Hunks) == 0 && reason == "not in the snapshot" {
			reason = "empty"
		}
		rep.Files.Omitted = append(rep.Files.Omitted, OmittedFile{Path: f.Path(), Reason: reason})
	}
	// Deleted files reach the filter too (nothing can be found in them).
	rep.Files.Reviewed = len(kept)
	if info.Unread != "" {
		rep.Notes = append(rep.Notes, "the analyzers saw only the start of the head revision: "+info.Unread)
	}
	if n := skippedTotal(info); n > len(info.SkippedSample) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d files of the head revision were not given to the analyzers (%s); the report lists %d of them", n, reasonsText(info.Skipped), len(info.SkippedSample)))
	} else if n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d files of the head revision were not given to the analyzers (%s)", n, reasonsText(info.Skipped)))
	}

	// Gate.
	opts.stage("gate")
	tg := time.Now()
	req := gate.Request{Snapshot: snap, Analyzers: analyzers, Policy: policy}
	if mode != gate.ModeNoFilter {
		req.Changed = changed
		if req.Changed == nil {
			req.Changed = []string{}
		}
	}
	var gres gate.Result
	if opts.Gate != nil {
		gres = opts.Gate.Run(ctx, req)
	} else {
		rep.Notes = append(rep.Notes, "no sandbox: the analyzers did not run")
	}
	rep.Analyzers = gres.Analyzers
	if rep.Analyzers == nil {
		rep.Analyzers = []gate.AnalyzerResult{}
	}
	filter := gate.NewFilter(kept, mode)
	rep.Findings = filter.MarkAll(gres.Findings)
	if gres.Superseded != nil {
		rep.Superseded = gres.Superseded
	}
	policy.Apply(rep.Findings)
	rep.Summary = gate.Summarize(rep.Findings)
	if lines := gate.SuppressedText(rep.Summary); len(lines) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d finding%s on the change (%s); `classes:` in %s changes it, `suppress: []` reports everything in a class",
			SuppressedNotePrefix, rep.Summary.Suppressed, plural(rep.Summary.Suppressed), strings.Join(lines, "; "), repoconfig.FileName))
	}
	rep.DurationsMS["gate"] = time.Since(tg).Milliseconds()
	rep.Files.NotAnalysed = notAnalysed(kept, analyzers, gres.Analyzers)

	// Tests.
	if opts.Tests != nil {
		opts.stage("tests")
		tt := time.Now()
		tr := opts.Tests.RunTests(ctx, TestRequest{Change: ch, Config: cfg})
		rep.Tests = &tr
		rep.DurationsMS["tests"] = time.Since(tt).Milliseconds()
	}

	// Model.
	if opts.Reviewer != nil {
		opts.stage("model")
		tm := time.Now()
		in := ModelInput{
			Repository: ch.Repository, Title: ch.Title, Body: ch.Body, Base: ch.Base, Head: ch.Head,
			Diff: kept, Index: diff.NewIndex(kept), Findings: rep.Findings, Tests: rep.Tests,
			Instructions: cfg.Instructions, Omitted: slices.Clone(rep.Files.Omitted),
		}
		m, err := opts.Reviewer.Review(ctx, in)
		if err != nil {
			m.Status = ModelFailed
			m.Note = "model review failed: " + textclip.OneLine(err.Error(), maxReasonBytes)
		}
		rep.Model = normalizeModel(m)
		rep.DurationsMS["model"] = time.Since(tm).Milliseconds()
		if cfg.EvidenceMode() != repoconfig.EvidenceOff && len(rep.Model.Comments) > 0 {
			opts.stage("evidence")
			te := time.Now()
			verifyComments(ctx, ch, cfg, &rep.Model, opts)
			rep.DurationsMS["evidence"] = time.Since(te).Milliseconds()
		}
	}

	rep.Files.Reviewed = reviewedCount(kept, rep.Files.NotAnalysed, rep.Model)
	rep.Conclusion = conclude(rep, failOn)
	rep.DurationsMS["total"] = time.Since(t0).Milliseconds()
	return rep, nil
}

// SuppressedNotePrefix starts the note that counts the findings path-class
// policy took out of the review (Markdown says it under the findings).
const SuppressedNotePrefix = "suppressed by path-class policy"

// NothingToReviewPrefix starts the note of a change that changes no file.
const NothingToReviewPrefix = "nothing to review"

func nothingNote(ch *Change) string {
	return fmt.Sprintf("%s: %s (%s) changes no file since its merge base with %s (%s)", NothingToReviewPrefix,
		ch.Head.Ref, ShortSHA(ch.Head.SHA), ch.Base.Ref, ShortSHA(ch.Base.SHA))
}

// uncommittedNote names the working tree's uncommitted paths, which the review (of
// commits) did not see.
func uncommittedNote(ch *Change) string {
	names := make([]string, len(ch.Uncommitted))
	for i, p := range ch.Uncommitted {
		names[i] = workspace.Quote(p)
	}
	list := strings.Join(names, ", ")
	if ch.UncommittedMore > 0 {
		list += fmt.Sprintf(" and %d more", ch.UncommittedMore)
	}
	n := len(ch.Uncommitted) + ch.UncommittedMore
	return fmt.Sprintf("%d uncommitted change%s in the working tree %s not reviewed (the review reads commits; commit to include them): %s",
		n, plural(n), map[bool]string{true: "is", false: "are"}[n == 1], list)
}

func (o Options) stage(name string) {
	if o.Stage != nil {
		o.Stage(name)
	}
}

// ParseFailOn reads a --fail-on value: a severity as finding.ParseSeverity
// reads it, or "never" ("" severity).
func ParseFailOn(s string) (finding.Severity, error) {
	if strings.TrimSpace(s) == "never" {
		return "", nil
	}
	return finding.ParseSeverity(s)
}

// effectiveFailOn is the least severity that fails the review: override
// when set (as ParseFailOn reads it), else the repository's. "" means never.
func effectiveFailOn(cfg repoconfig.Config, override string) (finding.Severity, error) {
	if strings.TrimSpace(override) == "" {
		return cfg.FailOnSeverity(), nil
	}
	s, err := ParseFailOn(override)
	if err != nil {
		return "", fmt.Errorf("fail-on: %w (or never)", err)
	}
	return s, nil
}

func conclude(rep *Report, failOn finding.Severity) Conclusion {
	if failOn == "" {
		return Success
	}
	if gate.Fails(rep.Findings, failOn) {
		return Failure
	}
	if rep.Tests != nil && rep.Tests.Status == TestsFailed {
		return Failure
	}
	for _, a := range rep.Analyzers {
		if a.Status != gate.StatusOK && a.Status != gate.StatusSkipped {
			return Incomplete
		}
	}
	if rep.Tests != nil && rep.Tests.Status == TestsError {
		return Incomplete
	}
	return Success
}

func normalizeModel(m ModelReport) ModelReport {
	if m.Status == "" {
		m.Status = ModelOK
	}
	if m.Comments == nil {
		m.Comments = []Comment{}
	}
	if m.DroppedComments == nil {
		m.DroppedComments = []DroppedComment{}
	}
	if m.OmittedFiles == nil {
		m.OmittedFiles = []OmittedFile{}
	}
	return m
}

func skippedTotal(info SnapshotInfo) int {
	n := 0
	for _, v := range info.Skipped {
		n += v
	}
	return n
}

func reasonsText(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// maxReasonBytes caps the one-line texts this package makes of errors and reasons.
const maxReasonBytes = 300

var _ io.Reader = (*cmdReader)(nil)

// notAnalysed lists the kept files no analyzer that ran (status ok) reads as
// code: only the secret scanner, or nothing, looked at them.
func notAnalysed(kept []*diff.File, analyzers []gate.Analyzer, results []gate.AnalyzerResult) []NotAnalysedFile {
	ok := map[string]bool{}
	declined := map[string][]string{}
	for _, r := range results {
		ok[r.Name] = r.Status == gate.StatusOK
		declined[r.Name] = r.Declined
	}
	out := []NotAnalysedFile{}
	for _, f := range kept {
		if f.Status == diff.StatusDeleted {
			continue
		}
		p := f.Path()
		if slices.ContainsFunc(analyzers, func(a gate.Analyzer) bool {
			return ok[a.Name] && a.ReadsAsCode(p) && !slices.Contains(declined[a.Name], p)
		}) {
			continue
		}
		out = append(out, NotAnalysedFile{Path: p, Language: cmp.Or(Language(p), "unknown")})
	}
	return out
}

// reviewedCount is how many kept files something read: an analyzer as code,
// or the model step (when it ran, less the files its budget left out).
func reviewedCount(kept []*diff.File, notAnalysed []NotAnalysedFile, m ModelReport) int {
	n := len(kept) - len(notAnalysed)
	if m.Status != ModelOK && m.Status != ModelPartial {
		return n
	}
	for _, f := range notAnalysed {
		if !slices.ContainsFunc(m.OmittedFiles, func(o OmittedFile) bool { return o.Path == f.Path }) {
			n++
		}
	}
	return n
}

// Package review is Aster's review pipeline: a Change (diff, head snapshot,
// configuration from the base revision) goes through the static-analysis gate,
// the tests when asked, and the model when one is configured, and comes out as
// a Report that renders as Markdown, JSON or SARIF. Sources of a Change (a
// local git repository here; a GitHub pull request elsewhere) and the model
// step are plugged in through small interfaces.
package review

import (
	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/evidence"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/testrun"
)

// ReportVersion is the version of the Report JSON shape.
const ReportVersion = 1

// Report is the whole result of a review. Its JSON form is `aster review
// --format json`; every field is always present (null or empty when unused).
type Report struct {
	Version    int      `json:"version"`
	Repository string   `json:"repository"`
	Base       Revision `json:"base"`
	Head       Revision `json:"head"`
	// Config says where the configuration came from and what it was.
	Config ConfigInfo `json:"config"`
	// FilterMode and FailOn are the effective settings (flags over config).
	FilterMode gate.Mode `json:"filter_mode"`
	FailOn     string    `json:"fail_on"`
	// Files counts the change's files and lists those left out of the review.
	Files FilesInfo `json:"files"`
	// Snapshot describes what the analyzers were given.
	Snapshot SnapshotInfo `json:"snapshot"`
	// Analyzers lists every analyzer with its status and duration.
	Analyzers []gate.AnalyzerResult `json:"analyzers"`
	// Findings are every finding, each marked by the diff-aware filter;
	// Summary counts them.
	Findings []gate.Marked `json:"findings"`
	Summary  gate.Summary  `json:"summary"`
	// Superseded are analyzer findings left out of the review because
	// another analyzer follows data into their category (Bandit's rules
	// without data flow, where taint-python ran); for measurement.
	Superseded []finding.Finding `json:"superseded"`
	// Tests is the test step's result; null when tests were not run.
	Tests *TestsReport `json:"tests"`
	// Model is the model step's result (status "skipped" without a provider).
	Model ModelReport `json:"model"`
	// Conclusion is success, failure (a reported finding at or above FailOn,
	// or failing tests) or incomplete (an analyzer or the tests could not
	// finish, and nothing failed).
	Conclusion Conclusion `json:"conclusion"`
	// Lifecycle is what became of an earlier review's open findings (ClassifyLifecycle); null
	// without an earlier review (aster review --previous, the App's earlier push).
	Lifecycle *Lifecycle `json:"lifecycle"`
	// Notes are things a reader should know (a head-side .aster.yml change
	// that was ignored, files hidden from the snapshot, caps reached).
	Notes       []string         `json:"notes"`
	DurationsMS map[string]int64 `json:"durations_ms"`
}

// Revision is one side of the change.
type Revision struct {
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

// ConfigInfo records the configuration used.
type ConfigInfo struct {
	// Source is "base:<sha>:.aster.yml", or "defaults" when the base
	// revision has none.
	Source string `json:"source"`
	// HeadChanged is set when the change edits .aster.yml: the edit is
	// reported, never obeyed.
	HeadChanged bool `json:"head_changed"`
	// Analyzers are the analyzers that ran, after the configuration.
	Analyzers []string          `json:"analyzers"`
	Effective repoconfig.Config `json:"effective"`
}

// FilesInfo counts the files of the change.
type FilesInfo struct {
	// Changed is the number of files in the diff; Reviewed those an
	// analyzer read as code or the model step reviewed.
	Changed  int `json:"changed"`
	Reviewed int `json:"reviewed"`
	// NotAnalysed lists the changed files in the snapshot that no analyzer
	// read as code (the secret scanner reads every file, and is not
	// counted), with their language: the gate says nothing about them.
	NotAnalysed []NotAnalysedFile `json:"not_analysed"`
	// Omitted lists changed files left out, with the reason (ignored by
	// .aster.yml, lockfile, generated, binary, too large, deleted).
	Omitted []OmittedFile `json:"omitted"`
	// DiffTruncated is set when the diff was over its cap and was cut.
	DiffTruncated bool `json:"diff_truncated"`
}

// NotAnalysedFile is a changed file no analyzer read as code.
type NotAnalysedFile struct {
	Path string `json:"path"`
	// Language is the file's language ("Java", "Dockerfile", ...), or
	// "unknown".
	Language string `json:"language"`
}

// OmittedFile is a file left out of a step.
type OmittedFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// SnapshotInfo describes the snapshot given to the analyzers.
type SnapshotInfo struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Skipped counts files of the head revision not given to analyzers,
	// per reason; SkippedSample lists some of them.
	Skipped       map[string]int `json:"skipped"`
	SkippedSample []OmittedFile  `json:"skipped_sample"`
	// Unread says why the end of the archive was not read (it held more
	// than the snapshot reads in all); empty when it was read to its end.
	Unread string `json:"unread"`
}

// TestsReport is the test step's result.
type TestsReport struct {
	// Status is passed, failed, error (the run could not be judged) or
	// skipped (no test command found).
	Status string `json:"status"`
	// Command is the repository's test command (tests.command, or the one
	// detected), without the wrapper Aster runs it in to collect its report.
	Command []string        `json:"command"`
	Summary testrun.Summary `json:"summary"`
	// SandboxStatus and ExitCode describe the test run itself (the install
	// phase's when that failed); DurationMS is the whole step, install
	// included, TestDurationMS the test phase's.
	SandboxStatus  string `json:"sandbox_status"`
	ExitCode       int    `json:"exit_code"`
	DurationMS     int64  `json:"duration_ms"`
	TestDurationMS int64  `json:"test_duration_ms"`
	// Install is the install phase (nil when the project has no
	// dependency step): status, downloads, cache, time, first error lines.
	Install *api.InstallResult `json:"install,omitempty"`
	// Output is the tail of the run's output, for a failed run.
	Output string `json:"output,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Unavailable is set when the sandbox layer could not run the tests for a
	// reason that passes (sandbox.ErrUnavailable: the engine unreachable;
	// sandbox.ErrBusy: no slot within the queue's wait), in either phase: a
	// later run may succeed. Not kept in the report.
	Unavailable bool `json:"-"`
}

// Model step statuses.
const (
	ModelOK      = "ok"
	ModelSkipped = "skipped"
	ModelFailed  = "failed"
	ModelPartial = "partial" // some calls or files were dropped by the budget
)

// NoProviderNote is the model note when no provider is configured.
const NoProviderNote = "model review skipped: no provider configured"

// ModelReport is the model step's result. The model-review implementation
// (a Reviewer) fills it; the pipeline fills it alone when there is none.
type ModelReport struct {
	// Status is ok, skipped, failed or partial; Note says why in one line.
	Status   string `json:"status"`
	Note     string `json:"note"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Summary is the model's overall assessment, sanitised.
	Summary string `json:"summary"`
	// Comments are anchored to lines inside the diff's hunks.
	Comments []Comment `json:"comments"`
	// DroppedComments could not be anchored or failed validation.
	DroppedComments []DroppedComment `json:"dropped_comments"`
	// OmittedFiles were left out of the prompt by the token budget.
	OmittedFiles []OmittedFile `json:"omitted_files"`
	Usage        Usage         `json:"usage"`
}

// Comment is one model comment on the new side of the diff.
type Comment struct {
	Path     string           `json:"path"`
	Line     int              `json:"line"`
	EndLine  int              `json:"end_line,omitempty"`
	Severity finding.Severity `json:"severity"`
	Body     string           `json:"body"`
	// Suggestion is replacement code for Line..EndLine, when offered.
	Suggestion  string `json:"suggestion,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Evidence is the model's test of its claim; Verification what running
	// it showed (evidence.go).
	Evidence     *evidence.Evidence     `json:"evidence,omitempty"`
	Verification *evidence.Verification `json:"verification,omitempty"`
}

// DroppedComment is a model comment that was not kept.
type DroppedComment struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
	// Verification is set for a comment dropped by its evidence.
	Verification *evidence.Verification `json:"verification,omitempty"`
}

// Usage is what the model step cost.
type Usage struct {
	Calls        int     `json:"calls"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Conclusion is the review's verdict for a check.
type Conclusion string

// Conclusions.
const (
	Success    Conclusion = "success"
	Failure    Conclusion = "failure"
	Incomplete Conclusion = "incomplete"
)

// ExitCode is the process exit status for a conclusion: 0 success, 1 failure,
// 3 incomplete (an analyzer or the tests could not finish; never green by
// accident).
func (c Conclusion) ExitCode() int {
	switch c {
	case Failure:
		return 1
	case Incomplete:
		return 3
	}
	return 0
}

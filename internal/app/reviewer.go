package app

import (
	"context"
	"io"
)

// Reviewer reviews one change of a pull request. It is the app's only view of the review
// pipeline (gate, tests, model): PipelineReviewer adapts internal/review to it, and tests
// plug in scripted ones. An error means the change could not be reviewed at all and the job
// is retried; analyzers, tests or a model that fail are reported in the output instead.
type Reviewer interface {
	Review(ctx context.Context, in ReviewInput) (ReviewOutput, error)
}

// ReviewInput is one change to review. Everything in it comes from the repository or the
// pull request: untrusted.
type ReviewInput struct {
	Repository string // owner/name
	Number     int
	Title      string
	Body       string
	Author     string
	Fork       bool
	Base       Revision
	Head       Revision
	// OpenSnapshot returns the head revision as an uncompressed tar stream of the tree
	// (GitHub's archive, its top directory removed). Each call starts a new stream.
	OpenSnapshot func() (io.ReadCloser, error)
	// Diff is the whole pull request's unified diff (base...head), the one comments must
	// be anchored to; DiffTruncated says it was cut at its cap.
	Diff          []byte
	DiffTruncated bool
	// SinceSHA is the head of the previous review; when set, IncrementalDiff is what
	// changed since (SinceSHA...head) and only its lines are new to the reviewer.
	SinceSHA        string
	IncrementalDiff []byte
	// Config is .aster.yml of the base revision (nil when it has none): a pull request
	// cannot change how it is reviewed.
	Config []byte
	// ConfigError, when set, says the base configuration could not be read (too large):
	// the change is not reviewed with defaults instead.
	ConfigError string
	// Tests asks for the repository's tests even when Config names no test command.
	Tests bool
}

// Revision is one side of a pull request.
type Revision struct {
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

// Check-run conclusions the output may carry.
const (
	ConclusionSuccess = "success"
	ConclusionFailure = "failure"
	ConclusionNeutral = "neutral" // the review could not finish (an analyzer, the tests, the config)
)

// ReviewOutput is a finished review. It is stored as JSON between a job's attempts, so a
// retry posts what the first attempt found instead of asking the model again.
type ReviewOutput struct {
	// Conclusion is decided by the static checks and the tests against the repository's
	// severity threshold; never by the model.
	Conclusion string `json:"conclusion"`
	// FailOn and FilterMode are the effective settings, for the summary.
	FailOn     string `json:"fail_on,omitempty"`
	FilterMode string `json:"filter_mode,omitempty"`
	// Findings are the static checks' findings over the whole pull request, each marked.
	Findings []Finding `json:"findings"`
	// Comments are the model's comments, anchored to new-side lines of the diff it saw.
	Comments []Comment `json:"comments"`
	// ModelSummary is the model's overall note (sanitised), "" without a model.
	ModelSummary string         `json:"model_summary,omitempty"`
	Model        ModelInfo      `json:"model"`
	Analyzers    []AnalyzerInfo `json:"analyzers"`
	Tests        *TestsInfo     `json:"tests,omitempty"`
	Usage        Usage          `json:"usage"`
	// FilesChanged and FilesReviewed count the pull request's files; Skipped lists files
	// left out and why.
	FilesChanged  int    `json:"files_changed"`
	FilesReviewed int    `json:"files_reviewed"`
	Skipped       []Skip `json:"skipped"`
	// Notes are things the reader should know (caps reached, an ignored .aster.yml edit).
	Notes       []string         `json:"notes"`
	DurationsMS map[string]int64 `json:"durations_ms"`
}

// Finding is one static-analysis finding.
type Finding struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line,omitempty"`
	Severity  string `json:"severity"` // error, warning, note
	Analyzer  string `json:"analyzer"`
	Rule      string `json:"rule"`
	Message   string `json:"message"`
	HelpURI   string `json:"help_uri,omitempty"`
	// Reported: within the repository's filter mode (on the change); only these count for
	// the conclusion and are annotated.
	Reported bool `json:"reported"`
	// Suppressed names the path class (tests, docs, ...) whose policy took the finding out
	// of the review although it is on the change; the review's notes count them.
	Suppressed string `json:"suppressed,omitempty"`
	// Fingerprint identifies the finding across pushes (not by line); "" is computed.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Comment is one model comment.
type Comment struct {
	Path        string `json:"path"`
	Line        int    `json:"line"`
	EndLine     int    `json:"end_line,omitempty"`
	Severity    string `json:"severity,omitempty"`
	Body        string `json:"body"`
	Suggestion  string `json:"suggestion,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

// ModelInfo says what the model step did.
type ModelInfo struct {
	Status   string `json:"status"` // ok, skipped, failed, partial
	Note     string `json:"note,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Dropped counts comments the model made that could not be anchored.
	Dropped int `json:"dropped,omitempty"`
}

// AnalyzerInfo is one analyzer's run.
type AnalyzerInfo struct {
	Name string `json:"name"`
	// Version is the tool's version in its image, when the image says.
	Version    string `json:"version,omitempty"`
	Status     string `json:"status"`
	Findings   int    `json:"findings"`
	DurationMS int64  `json:"duration_ms"`
	Reason     string `json:"reason,omitempty"`
}

// TestsInfo is the test step's result.
type TestsInfo struct {
	Status   string   `json:"status"` // passed, failed, error, skipped
	Command  []string `json:"command,omitempty"`
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Skipped  int      `json:"skipped"`
	Failures []string `json:"failures,omitempty"`
	Reason   string   `json:"reason,omitempty"`
}

// Usage is what the model step cost.
type Usage struct {
	Calls        int     `json:"calls"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Skip is a file left out of the review.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

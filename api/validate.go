package api

// ValidateResult is the body of a finished POST /v1/validate: the gate's
// findings over the snapshot, marked against the changed files, and what
// each analyzer did.
type ValidateResult struct {
	Findings   []Finding        `json:"findings"`
	Summary    FindingSummary   `json:"summary"`
	Analyzers  []AnalyzerResult `json:"analyzers"`
	DurationMS int64            `json:"duration_ms"`
}

// Severities of a finding.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityNote    = "note"
)

// Finding is one analyzer finding, marked against the changed files.
type Finding struct {
	Analyzer    string   `json:"analyzer"`
	RuleID      string   `json:"rule_id"`
	RuleName    string   `json:"rule_name,omitempty"`
	Severity    string   `json:"severity"`
	Path        string   `json:"path"`
	StartLine   int      `json:"start_line"`
	StartColumn int      `json:"start_column,omitempty"`
	EndLine     int      `json:"end_line"`
	EndColumn   int      `json:"end_column,omitempty"`
	Message     string   `json:"message"`
	HelpURI     string   `json:"help_uri,omitempty"`
	CWE         []string `json:"cwe,omitempty"`
	// Also names the other analyzers ("analyzer/rule") that reported the
	// same problem on the same line, merged into this finding.
	Also []string `json:"also,omitempty"`
	Fix  *Fix     `json:"fix,omitempty"`
	// Flow is the path data took from a source to this finding's sink,
	// source first (the taint engines).
	Flow        []FlowStep `json:"flow,omitempty"`
	Fingerprint string     `json:"fingerprint"`
	// InDiffFile, InDiffContext and OnAddedLine place the finding against
	// the changed files; Reported says whether the review keeps it.
	InDiffFile    bool `json:"in_diff_file"`
	InDiffContext bool `json:"in_diff_context"`
	OnAddedLine   bool `json:"on_added_line"`
	Reported      bool `json:"reported"`
	// Classes are the path classes of the finding's file; Suppressed names
	// the class whose policy took the finding out, SuppressedBy the
	// selector that matched.
	Classes      []string `json:"classes,omitempty"`
	Suppressed   string   `json:"suppressed,omitempty"`
	SuppressedBy string   `json:"suppressed_by,omitempty"`
	// DismissedBy names who dismissed the finding on the repository (the
	// GitHub App's memory of /aster ignore); never set by /v1/validate.
	DismissedBy string `json:"dismissed_by,omitempty"`
}

// FlowStep is one step of a finding's data flow.
type FlowStep struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	// Text is what held the data there, e.g. request.args['q'].
	Text string `json:"text"`
}

// Fix is an analyzer's suggested change.
type Fix struct {
	Description  string        `json:"description,omitempty"`
	Replacements []Replacement `json:"replacements"`
}

// Replacement replaces a range of a file with Text.
type Replacement struct {
	Path        string `json:"path"`
	StartLine   int    `json:"start_line"`
	StartColumn int    `json:"start_column"`
	EndLine     int    `json:"end_line"`
	EndColumn   int    `json:"end_column"`
	Text        string `json:"text"`
}

// FindingSummary counts a validate answer's findings.
type FindingSummary struct {
	Total       int `json:"total"`
	Reported    int `json:"reported"`
	OutsideDiff int `json:"outside_diff"`
	Suppressed  int `json:"suppressed"`
	// Dismissed counts findings a person dismissed on the repository (the
	// GitHub App only); absent from /v1/validate.
	Dismissed int `json:"dismissed,omitempty"`
	// BySeverity counts reported findings per severity.
	BySeverity map[string]int `json:"by_severity"`
	// SuppressedByClass counts suppressed findings per path class, then
	// per "analyzer/rule".
	SuppressedByClass map[string]map[string]int `json:"suppressed_by_class"`
}

// Statuses of an analyzer's run.
const (
	AnalyzerOK      = "ok"
	AnalyzerFailed  = "failed"
	AnalyzerTimeout = "timeout"
	AnalyzerSkipped = "skipped"
	AnalyzerError   = "error"
)

// AnalyzerResult is what one analyzer did.
type AnalyzerResult struct {
	Name string `json:"name"`
	// Version is the tool's version as the image records it.
	Version string `json:"version,omitempty"`
	Status  string `json:"status"`
	// Reason explains every status but ok, in one line.
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Findings   int    `json:"findings"`
	// TargetFiles is the number of files the analyzer was given (0 for
	// whole-snapshot analyzers).
	TargetFiles int `json:"target_files"`
	// ExitCode is the tool's exit status when it ran to its end; -1 when
	// it did not.
	ExitCode   int      `json:"exit_code"`
	RunID      string   `json:"run_id,omitempty"`
	ToolErrors []string `json:"tool_errors,omitempty"`
	Dropped    int      `json:"dropped,omitempty"`
	Suppressed int      `json:"suppressed,omitempty"`
	// SkippedFiles counts target files set aside, per reason.
	SkippedFiles map[string]int `json:"skipped_files,omitempty"`
	// Stderr is the tail of the tool's stderr when it did not succeed.
	Stderr  string           `json:"stderr,omitempty"`
	Notices []AnalyzerNotice `json:"notices,omitempty"`
	Stats   *AnalyzerStats   `json:"stats,omitempty"`
	// Superseded counts findings not reported because another analyzer
	// follows data into their category.
	Superseded int `json:"superseded,omitempty"`
	// Batches is the number of sandboxes the analyzer ran in when its files
	// were given in batches (each batch's report read under the output cap
	// by itself); absent for one run.
	Batches int `json:"batches,omitempty"`
}

// AnalyzerNotice is a tool's warning about a file of its run.
type AnalyzerNotice struct {
	Path string `json:"path,omitempty"`
	Text string `json:"text"`
}

// AnalyzerStats is a tool's own account of its run.
type AnalyzerStats struct {
	Files     int    `json:"files"`
	MS        int64  `json:"ms"`
	MaxRSSKB  int64  `json:"max_rss_kb"`
	CPUMS     int64  `json:"cpu_ms,omitempty"`
	MaxFileMS int64  `json:"max_file_ms,omitempty"`
	Slowest   string `json:"slowest,omitempty"`
}

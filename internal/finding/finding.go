// Package finding is the one model of a static-analysis result in Aster, with
// readers for the formats analyzers write (SARIF 2.1.0, Semgrep's --json,
// ShellCheck's json1, Bandit's json) and a SARIF 2.1.0 writer. Analyzer output
// is untrusted: every reader caps what it reads and fails with ErrInvalid on
// garbage.
package finding

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Severity orders findings. It is also the value of --fail-on (with "never").
type Severity string

// The three severities, as SARIF names its levels.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Note    Severity = "note"
)

// Severities lists the severities from most to least severe.
var Severities = []Severity{Error, Warning, Note}

// Rank is 3 for error, 2 for warning, 1 for note and 0 for anything else.
func (s Severity) Rank() int {
	switch s {
	case Error:
		return 3
	case Warning:
		return 2
	case Note:
		return 1
	}
	return 0
}

// AtLeast reports whether s is as severe as min or more.
func (s Severity) AtLeast(min Severity) bool { return s.Rank() >= min.Rank() && min.Rank() > 0 }

// ParseSeverity reads "error", "warning" or "note" (any case; "info" is note).
func ParseSeverity(s string) (Severity, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "error":
		return Error, nil
	case "warning", "warn":
		return Warning, nil
	case "note", "info":
		return Note, nil
	}
	return "", fmt.Errorf("severity %q is not one of error, warning, note", s)
}

// Finding is one problem an analyzer reported.
type Finding struct {
	Analyzer string   `json:"analyzer"`
	RuleID   string   `json:"rule_id"`
	RuleName string   `json:"rule_name,omitempty"`
	Severity Severity `json:"severity"`
	// Path is relative to the repository root, with forward slashes.
	Path string `json:"path"`
	// Lines and columns are 1-based; 0 means unknown (a file-level finding has
	// StartLine 0). EndLine is at least StartLine; EndColumn is exclusive.
	StartLine   int    `json:"start_line"`
	StartColumn int    `json:"start_column,omitempty"`
	EndLine     int    `json:"end_line"`
	EndColumn   int    `json:"end_column,omitempty"`
	Message     string `json:"message"`
	HelpURI     string `json:"help_uri,omitempty"`
	// CWE lists the weaknesses the rule reports, as "CWE-89", when the
	// analyzer says (rule metadata, SARIF tags "external/cwe/cwe-89").
	CWE []string `json:"cwe,omitempty"`
	Fix *Fix     `json:"fix,omitempty"`
	// Flow is the path data took from a source to the sink the finding is
	// on, source first (SARIF codeFlows; at most MaxFlowSteps steps).
	Flow []FlowStep `json:"flow,omitempty"`
	// Also names ("analyzer/rule") the other analyzers that reported the
	// same problem on the same line; the gate merged their findings into
	// this one.
	Also []string `json:"also,omitempty"`
	// Fingerprint identifies the finding across runs and pushes (see
	// AssignFingerprints): it tells two occurrences apart and does not depend
	// on the line number.
	Fingerprint string `json:"fingerprint"`
}

// FlowStep is one step of a Flow: where the data was, and what held it
// ("request.args['q']", "query", "cursor.execute").
type FlowStep struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Caps of a flow read from an analyzer's output.
const (
	MaxFlowSteps    = 16
	MaxFlowStepText = 200
)

// Fix is a suggested change.
type Fix struct {
	Description  string        `json:"description,omitempty"`
	Replacements []Replacement `json:"replacements"`
}

// Replacement replaces the text between (StartLine, StartColumn) and
// (EndLine, EndColumn) (end exclusive, 1-based) of Path with Text. Equal start
// and end insert.
type Replacement struct {
	Path        string `json:"path"`
	StartLine   int    `json:"start_line"`
	StartColumn int    `json:"start_column"`
	EndLine     int    `json:"end_line"`
	EndColumn   int    `json:"end_column"`
	Text        string `json:"text"`
}

// Location renders "path:line" or "path:line:col" for messages.
func (f Finding) Location() string {
	switch {
	case f.StartLine <= 0:
		return f.Path
	case f.StartColumn > 0:
		return f.Path + ":" + strconv.Itoa(f.StartLine) + ":" + strconv.Itoa(f.StartColumn)
	default:
		return f.Path + ":" + strconv.Itoa(f.StartLine)
	}
}

// Sort orders findings by path, line, column, analyzer and rule.
func Sort(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.StartLine, b.StartLine),
			cmp.Compare(a.StartColumn, b.StartColumn),
			cmp.Compare(a.Analyzer, b.Analyzer),
			cmp.Compare(a.RuleID, b.RuleID),
			cmp.Compare(a.Message, b.Message),
		)
	})
}

// Dedupe removes exact repeats (same analyzer, rule, place and message), which
// tools emit when a file is passed twice. fs must be sorted.
func Dedupe(fs []Finding) []Finding {
	return slices.CompactFunc(fs, func(a, b Finding) bool {
		return a.Analyzer == b.Analyzer && a.RuleID == b.RuleID && a.Path == b.Path &&
			a.StartLine == b.StartLine && a.StartColumn == b.StartColumn &&
			a.EndLine == b.EndLine && a.EndColumn == b.EndColumn && a.Message == b.Message
	})
}

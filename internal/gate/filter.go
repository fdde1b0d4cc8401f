package gate

import (
	"fmt"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
)

// Mode is the diff-aware filter's mode. It is also the --filter-mode flag
// (it implements pflag.Value).
type Mode string

// The filter modes, from strictest to none.
const (
	// ModeAdded reports findings on lines the change added (the default).
	ModeAdded Mode = "added"
	// ModeDiffContext reports findings on any line inside a hunk, context
	// lines included.
	ModeDiffContext Mode = "diff_context"
	// ModeFile reports findings anywhere in a file the change touched.
	ModeFile Mode = "file"
	// ModeNoFilter reports every finding.
	ModeNoFilter Mode = "nofilter"
)

// Modes lists the modes.
var Modes = []Mode{ModeAdded, ModeDiffContext, ModeFile, ModeNoFilter}

// ParseMode reads a mode name; "" is the default, added.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeAdded, nil
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("filter mode %q is not one of added, diff_context, file, nofilter", s)
}

// String implements pflag.Value.
func (m *Mode) String() string {
	if *m == "" {
		return string(ModeAdded)
	}
	return string(*m)
}

// Set implements pflag.Value.
func (m *Mode) Set(s string) error {
	v, err := ParseMode(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Type implements pflag.Value.
func (m *Mode) Type() string { return "mode" }

// Marked is a finding with where it lies relative to the change. Findings are
// marked, never dropped, so that a report can say what was outside the diff.
type Marked struct {
	finding.Finding
	// InDiffFile: the finding's file is changed by the diff.
	InDiffFile bool `json:"in_diff_file"`
	// InDiffContext: some line of the finding's range is inside a hunk.
	InDiffContext bool `json:"in_diff_context"`
	// OnAddedLine: some line of the finding's range was added by the change.
	OnAddedLine bool `json:"on_added_line"`
	// Reported: the filter mode keeps this finding in the review, and no
	// class policy suppresses it.
	Reported bool `json:"reported"`
	// Classes are the path classes of the finding's file (Policy.Classify).
	Classes []Class `json:"classes,omitempty"`
	// Suppressed names the class whose policy took this finding, which the
	// filter kept, out of the review; SuppressedBy is the selector that
	// matched (e.g. "assert").
	Suppressed   Class  `json:"suppressed,omitempty"`
	SuppressedBy string `json:"suppressed_by,omitempty"`
	// DismissedBy names who dismissed this finding on the repository (the GitHub App's
	// memory of "/aster ignore"); such a finding is not reported.
	DismissedBy string `json:"dismissed_by,omitempty"`
}

// Filter marks findings against one diff, indexed once.
type Filter struct {
	ix   *diff.Index
	mode Mode
}

// maxRangeLines bounds how many lines of one finding's range are looked up.
const maxRangeLines = 10_000

// NewFilter indexes files for mode.
func NewFilter(files []*diff.File, mode Mode) *Filter {
	if mode == "" {
		mode = ModeAdded
	}
	return &Filter{ix: diff.NewIndex(files), mode: mode}
}

// Mode returns the filter's mode.
func (f *Filter) Mode() Mode { return f.mode }

// Mark marks one finding.
func (f *Filter) Mark(fd finding.Finding) Marked {
	m := Marked{Finding: fd}
	file := f.ix.File(fd.Path)
	if file != nil && file.Status != diff.StatusDeleted {
		m.InDiffFile = true
		if fd.StartLine <= 0 {
			// A file-level finding: it is on the change when the whole file is.
			if file.Status == diff.StatusAdded || file.Status == diff.StatusCopied {
				m.InDiffContext, m.OnAddedLine = true, true
			}
		} else {
			end := max(fd.EndLine, fd.StartLine)
			end = min(end, fd.StartLine+maxRangeLines)
			for n := fd.StartLine; n <= end; n++ {
				l := f.ix.Line(fd.Path, n)
				if l == nil {
					continue
				}
				m.InDiffContext = true
				if l.Kind == diff.Added {
					m.OnAddedLine = true
					break
				}
			}
		}
	}
	switch f.mode {
	case ModeAdded:
		m.Reported = m.OnAddedLine
	case ModeDiffContext:
		m.Reported = m.InDiffContext
	case ModeFile:
		m.Reported = m.InDiffFile
	default:
		m.Reported = true
	}
	return m
}

// MarkAll marks every finding, in order.
func (f *Filter) MarkAll(fs []finding.Finding) []Marked {
	out := make([]Marked, len(fs))
	for i, fd := range fs {
		out[i] = f.Mark(fd)
	}
	return out
}

// Summary counts marked findings.
type Summary struct {
	Total int `json:"total"`
	// Reported are kept by the filter mode and not suppressed; OutsideDiff
	// are not kept by the filter mode; Suppressed were kept by it but a class
	// policy took them out.
	Reported    int `json:"reported"`
	OutsideDiff int `json:"outside_diff"`
	Suppressed  int `json:"suppressed"`
	// Dismissed were dismissed on the repository by a person (the App's memory); absent
	// where nothing can be dismissed (aster review, /v1/validate).
	Dismissed int `json:"dismissed,omitempty"`
	// BySeverity counts reported findings per severity.
	BySeverity map[finding.Severity]int `json:"by_severity"`
	// SuppressedByClass counts suppressed findings per class and
	// "analyzer/rule".
	SuppressedByClass map[Class]map[string]int `json:"suppressed_by_class"`
}

// Summarize counts ms.
func Summarize(ms []Marked) Summary {
	s := Summary{BySeverity: map[finding.Severity]int{finding.Error: 0, finding.Warning: 0, finding.Note: 0},
		SuppressedByClass: map[Class]map[string]int{}}
	for _, m := range ms {
		s.Total++
		switch {
		case m.Reported:
			s.Reported++
			s.BySeverity[m.Severity]++
		case m.DismissedBy != "":
			s.Dismissed++
		case m.Suppressed != "":
			s.Suppressed++
			byRule := s.SuppressedByClass[m.Suppressed]
			if byRule == nil {
				byRule = map[string]int{}
				s.SuppressedByClass[m.Suppressed] = byRule
			}
			byRule[m.Analyzer+"/"+m.RuleID]++
		default:
			s.OutsideDiff++
		}
	}
	return s
}

// Fails reports whether any reported finding is at least as severe as min.
// An empty min (or "never") never fails.
func Fails(ms []Marked, min finding.Severity) bool {
	for _, m := range ms {
		if m.Reported && m.Severity.AtLeast(min) {
			return true
		}
	}
	return false
}

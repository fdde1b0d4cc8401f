package review

import (
	"fmt"
	"strings"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/safetext"
)

// maxFlowStepChars bounds one step's text in a rendered flow.
const maxFlowStepChars = 80

// flowText renders a finding's source-to-sink flow on one line:
// "`request.args['q']` (line 12) → `query` (line 15) → `cursor.execute`
// (line 18)"; a step in another file than the finding's names the file.
// code renders a step's text as a code span, place a file name.
func flowText(f finding.Finding, code, place func(string) string) string {
	parts := make([]string, 0, len(f.Flow))
	for _, st := range f.Flow {
		where := ""
		switch {
		case st.Path != "" && st.Path != f.Path && st.Line > 0:
			where = fmt.Sprintf(" (%s line %d)", place(st.Path), st.Line)
		case st.Path != "" && st.Path != f.Path:
			where = " (" + place(st.Path) + ")"
		case st.Line > 0:
			where = fmt.Sprintf(" (line %d)", st.Line)
		}
		parts = append(parts, code(st.Text)+where)
	}
	return strings.Join(parts, " → ")
}

// markdownFlow is flowText for the terminal's Markdown report.
func markdownFlow(f finding.Finding) string {
	return flowText(f, func(s string) string { return "`" + inline(safetext.Cut(s, maxFlowStepChars)) + "`" }, inline)
}

// CommentFlow is flowText for a pull-request comment: inert Markdown.
func CommentFlow(f finding.Finding) string {
	return flowText(f, func(s string) string { return safetext.Code(s, maxFlowStepChars) },
		func(s string) string { return safetext.Escape(s, 200) })
}

// maxNoticesShown bounds the files an analyzer's row names.
const maxNoticesShown = 5

// analyzerNotes says, for an analyzer's row, which findings it left to a
// data-flow analyzer and which files it did not analyse (a taint engine's
// per-file budget).
func analyzerNotes(a gate.AnalyzerResult) string {
	var parts []string
	if a.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d more finding%s past the cap of %d dropped, the least severe first.",
			a.Dropped, plural(a.Dropped), finding.DefaultMaxFindings))
	}
	if a.Suppressed > 0 {
		parts = append(parts, fmt.Sprintf("%d finding%s suppressed in the source.", a.Suppressed, plural(a.Suppressed)))
	}
	if a.Superseded > 0 {
		parts = append(parts, fmt.Sprintf("%d finding%s of rules without data flow left to taint-python.", a.Superseded, plural(a.Superseded)))
	}
	for i, n := range a.Notices {
		if i == maxNoticesShown {
			parts = append(parts, fmt.Sprintf("… and %d more files not analysed.", len(a.Notices)-i))
			break
		}
		parts = append(parts, n.Text+".")
	}
	return strings.Join(parts, " ")
}

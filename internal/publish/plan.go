package publish

import (
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
)

// maxAnnotationChars caps an annotation's message.
const maxAnnotationChars = 4000

// Scope says where inline comments may go: lines inside the pull request's hunks (a forge
// refuses anything else, GitHub with a 422 that would lose the whole review) and, for an
// incremental review, lines the new commits touched.
type Scope struct {
	anchor *diff.Index // the whole pull request's diff
	// incr is the incremental diff's; nil for a full review.
	incr *diff.Index
}

// NewScope indexes the pull request's parsed diff and, for an incremental review
// (incremental non-nil, possibly empty), the diff since the previous head.
func NewScope(files, incremental []*diff.File) Scope {
	sc := Scope{anchor: diff.NewIndex(files)}
	if incremental != nil {
		sc.incr = diff.NewIndex(incremental)
	}
	return sc
}

// inHunk reports whether line n of path is inside a hunk of ix.
func inHunk(ix *diff.Index, path string, n int) bool { return ix.Line(path, n) != nil }

// added reports whether line n of path was added by ix's diff.
func added(ix *diff.Index, path string, n int) bool {
	l := ix.Line(path, n)
	return l != nil && l.Kind == diff.Added
}

// findingLine returns the line to anchor a finding to, or 0: the first line of its range
// that is in the pull request's hunks (and added by the new commits when incremental).
func (sc Scope) findingLine(f gate.Marked) int {
	return sc.firstLine(f, true)
}

// firstLine is the first line of f's range in the pull request's hunks (and, when
// newOnly and incremental, added by the new commits), or 0.
func (sc Scope) firstLine(f gate.Marked, newOnly bool) int {
	end := max(f.EndLine, f.StartLine)
	if end-f.StartLine > 500 {
		end = f.StartLine + 500
	}
	for n := f.StartLine; n <= end; n++ {
		if !inHunk(sc.anchor, f.Path, n) {
			continue
		}
		if newOnly && sc.incr != nil && !added(sc.incr, f.Path, n) {
			continue
		}
		return n
	}
	return 0
}

// mayHavePosted reports whether an Aster of the legacy fingerprint scheme could have
// commented on f in an earlier review: f is on a line of the pull request's hunks and, in
// an incremental review, not on a line the new commits added (such a line did not exist
// then).
func (sc Scope) mayHavePosted(f gate.Marked) bool {
	if sc.firstLine(f, false) == 0 {
		return false
	}
	return sc.incr == nil || sc.findingLine(f) == 0
}

// Annotation is a finding on the check (a check run's annotation on GitHub): plain text,
// shown as it is.
type Annotation struct {
	Path      string
	StartLine int
	EndLine   int
	Severity  finding.Severity
	Title     string
	Message   string
}

// Publication is what one review shows on a pull request, whatever the forge: the inline
// comments (candidates, most important first: PlanReview decides against what is posted
// which go inline, which are folded and which were said before), the check's annotations,
// and how many model comments could not be placed.
type Publication struct {
	Comments    []Comment
	Annotations []Annotation
	// Unanchored counts model comments that could not be placed on the diff.
	Unanchored int
}

// Build decides what one review publishes. Identities come from the review as found; the
// text shown comes from it redacted by rd (once, before any escaping, which would hide a
// secret's shape from the redactor).
func Build(rep *review.Report, sc Scope, rd *safetext.Redactor) Publication {
	var p Publication
	fps := FindingIDs(rep.Findings)
	order := make([]int, len(rep.Findings))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return rep.Findings[b].Severity.Rank() - rep.Findings[a].Severity.Rank()
	})
	for _, i := range order {
		f := rep.Findings[i]
		if !f.Reported {
			continue
		}
		shown := review.RedactFinding(f, rd)
		p.Annotations = append(p.Annotations, annotation(shown))
		if f.Severity != finding.Error && f.Severity != finding.Warning {
			continue // notes are annotated, not commented: less noise
		}
		// Every error and warning is a comment: inline on its line when the diff has it,
		// otherwise listed in the review body, so nothing new goes unsaid; the fingerprints
		// keep what an earlier review said from being said again.
		gc := Comment{Path: f.Path, Line: sc.findingLine(f), Body: FindingComment(shown), ID: fps[i]}
		if gc.Line == 0 {
			gc.Line, gc.BodyOnly = max(f.StartLine, 0), true
		}
		if old := finding.LegacyMarkerID(f.Finding); old != "" && sc.mayHavePosted(f) {
			gc.Aliases = []string{old}
		}
		p.Comments = append(p.Comments, gc)
	}
	comments := slices.Clone(rep.Model.Comments)
	slices.SortStableFunc(comments, func(a, b review.Comment) int { return b.Severity.Rank() - a.Severity.Rank() })
	for _, c := range comments {
		if !inHunk(sc.anchor, c.Path, c.Line) || (sc.incr != nil && !inHunk(sc.incr, c.Path, c.Line)) {
			p.Unanchored++
			continue
		}
		gc := Comment{Path: c.Path, Line: c.Line, Body: ModelComment(review.RedactComment(c, rd)), ID: CommentID(c)}
		if f := sc.anchor.File(c.Path); c.EndLine > c.Line && f != nil && f.SameHunk(c.Line, c.EndLine) {
			gc.StartLine, gc.Line = c.Line, c.EndLine
		}
		p.Comments = append(p.Comments, gc)
	}
	return p
}

// annotation is a finding on the check: plain text, shown as it is.
func annotation(f gate.Marked) Annotation {
	msg := strings.TrimSpace(safetext.StripMarkers(safetext.Clean(f.Message)))
	if msg == "" {
		msg = f.RuleID
	}
	title := f.Analyzer + ": " + f.RuleID
	if len(f.Also) > 0 {
		// The analyzers whose findings of the same problem merged into this one.
		title += " (also " + strings.Join(f.Also, ", ") + ")"
	}
	return Annotation{
		Path: f.Path, StartLine: max(f.StartLine, 1), EndLine: max(f.EndLine, f.StartLine, 1), Severity: f.Severity,
		Title:   safetext.Cut(safetext.Clean(title), 200),
		Message: safetext.Cut(msg, maxAnnotationChars),
	}
}

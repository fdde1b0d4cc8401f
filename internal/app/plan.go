package app

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
)

// CheckRunName is the name of Aster's check run.
const CheckRunName = "aster"

// maxAnnotationChars caps an annotation's message.
const maxAnnotationChars = 4000

// scope says where inline comments may go: lines inside the pull request's hunks (GitHub
// refuses anything else with a 422 that would lose the whole review) and, for an
// incremental review, lines the new commits touched.
type scope struct {
	anchor *diff.Index // the whole pull request's diff
	// incr is the incremental diff's; nil for a full review.
	incr *diff.Index
}

// newScope parses the pull request's diff and, for an incremental review, the diff since
// the previous head (parseDiffs), and gives their scope.
func newScope(full, incr []byte, incremental bool) (scope, error) {
	p, err := parseDiffs(full, incr, incremental)
	if err != nil {
		return scope{}, err
	}
	return scopeOf(p), nil
}

// parseDiffs parses the pull request's diff (where comments may go) and, for an incremental
// review, the diff since the previous head (which lines are new): the one parse of each,
// which the worker hands to the Reviewer too.
func parseDiffs(full, incr []byte, incremental bool) (*ParsedDiffs, error) {
	// A diff cut at its cap still places comments on the part that is there.
	files, truncated, err := review.ParseDiff(bytes.NewReader(full), diff.Options{})
	if err != nil {
		return nil, fmt.Errorf("pull request diff: %w", err)
	}
	p := &ParsedDiffs{Files: files, Truncated: truncated}
	if incremental {
		inc, _, err := review.ParseDiff(bytes.NewReader(incr), diff.Options{})
		if err != nil {
			return nil, fmt.Errorf("incremental diff: %w", err)
		}
		p.Incremental = inc
		if p.Incremental == nil {
			p.Incremental = []*diff.File{}
		}
	}
	return p, nil
}

// scopeOf indexes the parsed diffs: where comments may go and, for an incremental review,
// which lines are new.
func scopeOf(p *ParsedDiffs) scope {
	sc := scope{anchor: diff.NewIndex(p.Files)}
	if p.Incremental != nil {
		sc.incr = diff.NewIndex(p.Incremental)
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
func (sc scope) findingLine(f gate.Marked) int {
	return sc.firstLine(f, true)
}

// firstLine is the first line of f's range in the pull request's hunks (and, when
// newOnly and incremental, added by the new commits), or 0.
func (sc scope) firstLine(f gate.Marked, newOnly bool) int {
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
func (sc scope) mayHavePosted(f gate.Marked) bool {
	if sc.firstLine(f, false) == 0 {
		return false
	}
	return sc.incr == nil || sc.findingLine(f) == 0
}

// plan is what one run posts.
type plan struct {
	comments    []github.Comment // inline candidates, most important first
	annotations []github.Annotation
	// unanchored counts model comments that could not be placed on the diff.
	unanchored int
}

// buildPlan decides what one run posts. Fingerprints come from the review as found; the
// text shown comes from it redacted by rd (once, before any escaping, which would hide a
// secret's shape from the redactor).
func buildPlan(rep *review.Report, sc scope, rd *safetext.Redactor) plan {
	var p plan
	fps := finding.MarkerIDs(markedFindings(rep.Findings))
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
		p.annotations = append(p.annotations, annotation(shown))
		if f.Severity != finding.Error && f.Severity != finding.Warning {
			continue // notes are annotated, not commented: less noise
		}
		// Every error and warning is a comment: inline on its line when the diff has it,
		// otherwise listed in the review body, so nothing new goes unsaid; the fingerprints
		// keep what an earlier review said from being said again.
		gc := github.Comment{Path: f.Path, Line: sc.findingLine(f), Body: review.FindingComment(shown), Fingerprint: fps[i]}
		if gc.Line == 0 {
			gc.Line, gc.BodyOnly = max(f.StartLine, 0), true
		}
		if old := finding.LegacyMarkerID(f.Finding); old != "" && sc.mayHavePosted(f) {
			gc.Aliases = []string{old}
		}
		p.comments = append(p.comments, gc)
	}
	comments := slices.Clone(rep.Model.Comments)
	slices.SortStableFunc(comments, func(a, b review.Comment) int { return b.Severity.Rank() - a.Severity.Rank() })
	for _, c := range comments {
		if !inHunk(sc.anchor, c.Path, c.Line) || (sc.incr != nil && !inHunk(sc.incr, c.Path, c.Line)) {
			p.unanchored++
			continue
		}
		gc := github.Comment{Path: c.Path, Line: c.Line, Body: review.ModelComment(review.RedactComment(c, rd)), Fingerprint: finding.CommentMarkerID(c.Fingerprint, c.Path, c.Body)}
		if f := sc.anchor.File(c.Path); c.EndLine > c.Line && f != nil && f.SameHunk(c.Line, c.EndLine) {
			gc.StartLine, gc.Line = c.Line, c.EndLine
		}
		p.comments = append(p.comments, gc)
	}
	return p
}

// annotation is a finding on the check run: plain text, which GitHub shows as it is.
func annotation(f gate.Marked) github.Annotation {
	level := "notice"
	switch f.Severity {
	case finding.Error:
		level = "failure"
	case finding.Warning:
		level = "warning"
	}
	msg := strings.TrimSpace(safetext.StripMarkers(safetext.Clean(f.Message)))
	if msg == "" {
		msg = f.RuleID
	}
	title := f.Analyzer + ": " + f.RuleID
	if len(f.Also) > 0 {
		// The analyzers whose findings of the same problem merged into this one.
		title += " (also " + strings.Join(f.Also, ", ") + ")"
	}
	return github.Annotation{
		Path: f.Path, StartLine: max(f.StartLine, 1), EndLine: max(f.EndLine, f.StartLine, 1), Level: level,
		Title:   safetext.Cut(safetext.Clean(title), 200),
		Message: safetext.Cut(msg, maxAnnotationChars),
	}
}

// markedFindings are the findings of fs.
func markedFindings(fs []gate.Marked) []finding.Finding {
	out := make([]finding.Finding, len(fs))
	for i, f := range fs {
		out[i] = f.Finding
	}
	return out
}

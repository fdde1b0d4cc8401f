package publish

import (
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
)

// FindingIDs identifies each of fs on the pull request, aligned with fs: the one identity
// of a finding across pushes, carried by the marker of its comment and named by every
// resolution and dismissal. It is built from the gate's fingerprint (finding.MarkerIDs).
func FindingIDs(fs []gate.Marked) []string {
	plain := make([]finding.Finding, len(fs))
	for i, f := range fs {
		plain[i] = f.Finding
	}
	return finding.MarkerIDs(plain)
}

// CommentID identifies a model comment on the pull request: the marker id of its
// fingerprint (finding.CommentMarkerID).
func CommentID(c review.Comment) string {
	return finding.CommentMarkerID(c.Fingerprint, c.Path, c.Body)
}

// EntryID identifies a lifecycle entry on the pull request: the marker id its comment
// was posted under (FindingIDs, CommentID), so a resolution finds its thread.
func EntryID(e review.LifecycleEntry) string {
	if e.Kind == review.KindComment {
		return finding.CommentMarkerID(e.Fingerprint, e.Path, "")
	}
	return finding.MarkerIDs([]finding.Finding{{Analyzer: e.Analyzer, RuleID: e.RuleID, Path: e.Path,
		Message: e.Message, Fingerprint: e.Fingerprint}})[0]
}

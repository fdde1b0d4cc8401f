package publish

import (
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
)

// TestResolutions: a resolution names the marker its finding's comment was posted under,
// and its reply says the commit and what ran, with an analyzer's rule id left inert.
func TestResolutions(t *testing.T) {
	m := gate.Marked{Reported: true, Finding: finding.Finding{Analyzer: "bandit", RuleID: "B602](https://evil.example) @team <!-- aster:fp=" + strings.Repeat("a", 32) + " -->",
		Path: "app.py", StartLine: 4, Severity: finding.Error, Message: "shell", Fingerprint: "v2:abc"}}
	lc := &review.Lifecycle{Resolved: []review.LifecycleEntry{
		{Kind: review.KindFinding, Path: "app.py", Line: 4, Fingerprint: "v2:abc", Analyzer: m.Analyzer, RuleID: m.RuleID, Head: "0123456789abcdef"},
		{Kind: review.KindFinding, Path: "gone.py", Fingerprint: "v2:def", Analyzer: "bandit", RuleID: "B101", CheckedBy: review.CheckedDeleted, Head: "0123456789abcdef"},
	}}
	rs := Resolutions(lc)
	if len(rs) != 2 || rs[0].ID != FindingIDs([]gate.Marked{m})[0] {
		t.Fatalf("resolutions %+v, want the marker id of the posted comment", rs)
	}
	if !slices.Equal(ResolvedMarkers(rs[0].Reply), []string{rs[0].ID}) || len(Markers(rs[0].Reply)) != 0 {
		t.Errorf("reply markers: %q", rs[0].Reply)
	}
	if !strings.HasPrefix(rs[0].Reply, "fixed in `0123456` — re-ran bandit ") || strings.Contains(rs[0].Reply, "](https://evil") ||
		strings.Contains(rs[0].Reply, " @team") || !strings.Contains(rs[0].Reply, "on this file: no longer reported") {
		t.Errorf("reply %q", rs[0].Reply)
	}
	if !strings.HasPrefix(rs[1].Reply, "fixed in `0123456` — the file was deleted") {
		t.Errorf("deleted file's reply %q", rs[1].Reply)
	}
	if Resolutions(nil) != nil {
		t.Error("resolutions without a lifecycle")
	}
}

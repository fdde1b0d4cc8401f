package publish

import (
	"regexp"
	"strings"

	"github.com/asterhq/aster/internal/safetext"
)

// Hidden markers. Forges render Markdown's HTML comments as nothing (GitHub and Gitea alike),
// so they ride along in comment bodies and are read back on the next run.
const (
	// SummaryMarker marks Aster's summary comment, the one edited in place on every run.
	SummaryMarker = "<!-- aster:summary -->"
	fpOpen        = "<!-- aster:fp="
	fpClose       = " -->"
)

var fingerprintMarker = regexp.MustCompile(`<!-- aster:fp=([0-9a-f]{16,64}) -->`)

// resolvedOpen starts the marker of a reply that says a finding was fixed: one per
// finding and thread, so the reply is posted once whatever is retried.
const resolvedOpen = "<!-- aster:resolved="

var resolvedMarker = regexp.MustCompile(`<!-- aster:resolved=([0-9a-f]{16,64}) -->`)

// WithResolvedMarker returns body, stripped of Aster markers, with the resolved marker of
// id appended.
func WithResolvedMarker(body, id string) string {
	return strings.TrimRight(safetext.StripMarkers(body), "\n") + "\n\n" + resolvedOpen + id + fpClose
}

// ResolvedMarkers returns the ids of the resolved markers in body.
func ResolvedMarkers(body string) []string {
	var out []string
	for _, m := range resolvedMarker.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// WithMarker returns body, stripped of any Aster marker it carried, with the marker of id
// appended on its own line.
func WithMarker(body, id string) string {
	return strings.TrimRight(safetext.StripMarkers(body), "\n") + "\n\n" + fpOpen + id + fpClose
}

// Markers returns the ids hidden in body, in order.
func Markers(body string) []string {
	var out []string
	for _, m := range fingerprintMarker.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// WithSummaryMarker returns body, stripped of Aster markers, starting with SummaryMarker.
func WithSummaryMarker(body string) string {
	return SummaryMarker + "\n" + safetext.StripMarkers(body)
}

// IsSummary reports whether body is an Aster summary comment.
func IsSummary(body string) bool {
	return strings.HasPrefix(body, SummaryMarker)
}

package github

import (
	"regexp"
	"strings"

	"github.com/asterhq/aster/internal/safetext"
)

// Hidden markers. GitHub renders HTML comments as nothing, so they ride along in comment bodies
// and are read back on the next run.
const (
	// SummaryMarker marks Aster's summary comment, the one edited in place on every run.
	SummaryMarker = "<!-- aster:summary -->"
	fpOpen        = "<!-- aster:fp="
	fpClose       = " -->"
)

var fingerprintMarker = regexp.MustCompile(`<!-- aster:fp=([0-9a-f]{16,64}) -->`)

// WithFingerprint returns body, stripped of any Aster marker it carried, with the fingerprint
// marker for fp appended on its own line.
func WithFingerprint(body, fp string) string {
	return strings.TrimRight(safetext.StripMarkers(body), "\n") + "\n\n" + fpOpen + fp + fpClose
}

// Fingerprints returns the fingerprints hidden in body, in order.
func Fingerprints(body string) []string {
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

// Package testrun decides how to run a repository's tests in a sandbox and
// reads what the runner reports: `go test -json` event streams and JUnit XML
// (pytest --junitxml, and most other runners). Reports come from untrusted
// code, so every read is capped and the summary is data about the run, never
// a security decision.
package testrun

import (
	"errors"
	"strings"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/textclip"
)

// Format names a machine-readable report format (the public api.ReportFormat).
type Format = api.ReportFormat

// The formats a Collector reads.
const (
	FormatGoJSON = api.ReportGoTestJSON // `go test -json` events on stdout
	FormatJUnit  = api.ReportJUnitXML   // a JUnit XML file, copied to stdout after the run
	FormatNone   = api.ReportNone       // no machine-readable report
)

// Caps on what is read and kept from a report.
const (
	// MaxReportBytes bounds the report bytes a Collector reads; past it the
	// summary says the report was cut.
	MaxReportBytes = 16 << 20
	// MaxLineBytes bounds one `go test -json` line; longer ones are skipped.
	MaxLineBytes = 1 << 20
	// MaxFailures bounds the failures listed; the rest are only counted.
	MaxFailures = 100
	// MaxMessageBytes bounds each failure message (its last bytes are kept).
	MaxMessageBytes = 4 << 10
	// maxTracked bounds the tests whose output is held while they run.
	maxTracked = 10_000
)

// Summary is what a test run reported (the public api.TestSummary). Counts
// are of leaf tests: a Go test with subtests counts its subtests, not itself;
// a pytest parametrised test counts each case. At most MaxFailures are listed.
type Summary = api.TestSummary

// Failure is one failed test.
type Failure = api.TestFailure

// ErrReportTooLarge marks a report cut at MaxReportBytes.
var ErrReportTooLarge = errors.New("test report too large")

// addFailure records a failure, keeping at most MaxFailures.
func addFailure(s *Summary, suite, name, message string) {
	s.Failed++
	if len(s.Failures) >= MaxFailures {
		s.FailuresOmitted++
		return
	}
	s.Failures = append(s.Failures, Failure{Name: clip(name, 1024), Suite: clip(suite, 1024), Message: tail(message, MaxMessageBytes)})
}

// tail keeps the last n bytes of s, on a rune boundary, with a marker when cut.
func tail(s string, n int) string {
	return textclip.Tail(strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD")), n, "[...] ")
}

// clip keeps the first n bytes of s, on a rune boundary.
func clip(s string, n int) string {
	return textclip.Head(strings.ToValidUTF8(s, "\uFFFD"), n, "[...]")
}

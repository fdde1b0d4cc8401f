package app

import (
	"context"
	"io"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/review"
)

// Reviewer reviews one change of a pull request. It is the app's only view of the review
// pipeline (gate, tests, model): PipelineReviewer runs internal/review, and tests plug in
// scripted ones. The review is internal/review's Report, the one model of a review; it is
// stored as JSON between a job's attempts, so a retry posts what the first attempt found
// instead of asking the model again. An error means the change could not be reviewed at all
// and the job is retried; analyzers, tests or a model that fail are reported in the Report.
type Reviewer interface {
	Review(ctx context.Context, in ReviewInput) (*review.Report, error)
}

// ReviewInput is one change to review. Everything in it comes from the repository or the
// pull request: untrusted.
type ReviewInput struct {
	Repository string // owner/name
	Number     int
	Title      string
	Body       string
	Author     string
	Fork       bool
	Base       review.Revision
	Head       review.Revision
	// OpenSnapshot returns the head revision as an uncompressed tar stream of the tree
	// (GitHub's archive, its top directory removed). Each call starts a new stream.
	OpenSnapshot func() (io.ReadCloser, error)
	// Diff is the whole pull request's unified diff (base...head), the one comments must
	// be anchored to; DiffTruncated says it was cut at its cap.
	Diff          []byte
	DiffTruncated bool
	// SinceSHA is the head of the previous review; when set, IncrementalDiff is what
	// changed since (SinceSHA...head) and only its lines are new to the reviewer.
	SinceSHA        string
	IncrementalDiff []byte
	// Config is .aster.yml of the base revision (nil when it has none): a pull request
	// cannot change how it is reviewed.
	Config []byte
	// ConfigError, when set, says the base configuration could not be read (too large):
	// the change is not reviewed with defaults instead.
	ConfigError string
	// Tests asks for the repository's tests even when Config names no test command.
	Tests bool
	// Parsed is Diff and IncrementalDiff parsed, once, by the worker, which places the
	// comments on the same files; nil: the Reviewer parses the text itself.
	Parsed *ParsedDiffs
}

// ParsedDiffs are a ReviewInput's diffs parsed.
type ParsedDiffs struct {
	// Files are Diff's; Truncated says the parser cut it at its caps.
	Files     []*diff.File
	Truncated bool
	// Incremental are IncrementalDiff's (nil for a full review).
	Incremental []*diff.File
}

// Check-run conclusions a review may carry.
const (
	ConclusionSuccess = review.CheckSuccess
	ConclusionFailure = review.CheckFailure
	ConclusionNeutral = review.CheckNeutral // the review could not finish (an analyzer, the tests, the config)
)

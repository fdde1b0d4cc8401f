package review

import (
	"context"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/gate"
)

// Reviewer is the model step. It is optional: with a nil Reviewer the report
// says NoProviderNote. An implementation must treat every field of ModelInput
// as untrusted data, anchor every comment to a line inside Diff's hunks (or
// drop it into DroppedComments), and report tokens, cost and calls. An error
// means the step failed as a whole; the review still carries the gate's
// findings and says so.
type Reviewer interface {
	Review(ctx context.Context, in ModelInput) (ModelReport, error)
}

// ModelInput is what the model step may see. Nothing here is trusted.
type ModelInput struct {
	Repository string
	// Title and Body of the pull request (empty for a local change).
	Title string
	Body  string
	Base  Revision
	Head  Revision
	// Diff holds the reviewed files only (omitted ones are in Omitted), with
	// new-side line numbers on every added and context line; Index looks
	// lines up by new-side number.
	Diff  []*diff.File
	Index *diff.Index
	// Findings are the gate's findings, marked by the diff-aware filter;
	// only those with Reported set are in the review's scope.
	Findings []gate.Marked
	// Tests is the test step's result, or nil.
	Tests *TestsReport
	// Instructions come from the base revision's .aster.yml.
	Instructions string
	// Omitted are files already left out before the model step.
	Omitted []OmittedFile
}

package review

import (
	"io"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/repoconfig"
)

// Change is what is reviewed, whatever its source.
type Change struct {
	Repository string
	Title      string
	Body       string
	Base       Revision
	Head       Revision
	// Diff is base...head, parsed; DiffTruncated says it was cut at its cap.
	Diff          []*diff.File
	DiffTruncated bool
	// Config comes from the base revision (ConfigSource says where);
	// HeadConfigChanged is set when the change edits it.
	Config            repoconfig.Config
	ConfigSource      string
	HeadConfigChanged bool
	// OpenSnapshot returns the head revision as an uncompressed tar stream
	// (untracked files and the VCS directory never in it). The pipeline
	// filters it before any analyzer sees it.
	OpenSnapshot func() (io.ReadCloser, error)
	// HeadFiles, when known, lists every regular file of the head revision,
	// so that files missing from the snapshot (export-ignore) are noticed.
	HeadFiles []string
	// SourceRoot is the local checkout, for SARIF's SRCROOT; may be empty.
	SourceRoot string
	// Uncommitted names paths of a local checkout whose working tree differs
	// from the reviewed head (modified, staged, deleted or untracked), at most
	// MaxUncommitted; UncommittedMore counts the rest. The review works on
	// commits, so the report names them: they were not reviewed.
	Uncommitted     []string
	UncommittedMore int
}

// MaxUncommitted bounds the uncommitted paths a Change names.
const MaxUncommitted = 20

// NothingToReview reports whether the change has no changed file at all
// (base and head are the same tree, e.g. --base HEAD).
func (c *Change) NothingToReview() bool {
	return len(c.Diff) == 0 && !c.DiffTruncated
}

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
}

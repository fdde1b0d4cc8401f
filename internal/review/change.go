package review

import (
	"errors"
	"fmt"
	"io"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/repoconfig"
)

// Change is what is reviewed, whatever its source.
type Change struct {
	Repository string
	// CacheID is the repository's identity for the dependency cache (an
	// origin URL without credentials, the App's repository, a fork's own
	// name); empty: the test step uses no cache.
	CacheID string
	// CacheScope is where in that repository the head comes from, for the
	// dependency cache: depcache.DefaultScope for the default branch, else
	// the pull request ("pr:12") or branch; empty: no cache.
	CacheScope string
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
	// OpenBaseSnapshot, when set, returns the tree the change applies to
	// (MergeBase, or Base when that is unknown) the same way: model
	// evidence that fails on the head is run there too.
	OpenBaseSnapshot func() (io.ReadCloser, error)
	MergeBase        string
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

// ParseDiff reads a unified diff of base...head, whatever its source (git here, GitHub's
// rendering in the App). truncated says the diff or one of its files was cut at the
// parser's caps: what was read stands, and the review says the rest was not reviewed.
func ParseDiff(r io.Reader, opts diff.Options) (files []*diff.File, truncated bool, err error) {
	files, err = diff.Parse(r, opts)
	if errors.Is(err, diff.ErrTooLarge) {
		truncated, err = true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("parse diff: %w", err)
	}
	for _, f := range files {
		truncated = truncated || f.Truncated
	}
	return files, truncated, nil
}

// BaseConfig reads .aster.yml as the base revision baseSHA has it (data; nil when the base
// has none): the configuration and where it came from ("base:<sha>:.aster.yml", or
// "defaults"). A pull request or a branch never configures its own review.
func BaseConfig(data []byte, baseSHA string) (repoconfig.Config, string, error) {
	if data == nil {
		return repoconfig.Default(), "defaults", nil
	}
	if len(data) > repoconfig.MaxFileBytes {
		return repoconfig.Config{}, "", fmt.Errorf("%s at base %s: %w: %d bytes, more than %d", repoconfig.FileName, ShortSHA(baseSHA),
			repoconfig.ErrInvalid, len(data), repoconfig.MaxFileBytes)
	}
	cfg, err := repoconfig.Parse(data)
	if err != nil {
		return repoconfig.Config{}, "", fmt.Errorf("%s at base %s: %w", repoconfig.FileName, ShortSHA(baseSHA), err)
	}
	return cfg, "base:" + baseSHA + ":" + repoconfig.FileName, nil
}

// MaxUncommitted bounds the uncommitted paths a Change names.
const MaxUncommitted = 20

// NothingToReview reports whether the change has no changed file at all
// (base and head are the same tree, e.g. --base HEAD).
func (c *Change) NothingToReview() bool {
	return len(c.Diff) == 0 && !c.DiffTruncated
}

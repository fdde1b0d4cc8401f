package app

import (
	"bytes"
	"fmt"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/review"
)

// CheckRunName is the name of Aster's check run.
const CheckRunName = "aster"

// parseDiffs parses the pull request's diff (where comments may go) and, for an incremental
// review, the diff since the previous head (which lines are new): the one parse of each,
// which the worker hands to the Reviewer too.
func parseDiffs(full, incr []byte, incremental bool) (*ParsedDiffs, error) {
	// A diff cut at its cap still places comments on the part that is there.
	files, truncated, err := review.ParseDiff(bytes.NewReader(full), diff.Options{})
	if err != nil {
		return nil, fmt.Errorf("pull request diff: %w", err)
	}
	p := &ParsedDiffs{Files: files, Truncated: truncated}
	if incremental {
		inc, _, err := review.ParseDiff(bytes.NewReader(incr), diff.Options{})
		if err != nil {
			return nil, fmt.Errorf("incremental diff: %w", err)
		}
		p.Incremental = inc
		if p.Incremental == nil {
			p.Incremental = []*diff.File{}
		}
	}
	return p, nil
}

// scopeOf is where the parsed diffs let comments go.
func scopeOf(p *ParsedDiffs) publish.Scope { return publish.NewScope(p.Files, p.Incremental) }

package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
)

// Lifecycle is what became of an earlier review's open findings on this head: each was
// re-checked by running what raised it again, and is resolved (the check no longer reports
// it), still open (carried forward, never posted again) or, for what this review found
// that the earlier one had not, new.
type Lifecycle struct {
	// Previous is the head the earlier review reviewed.
	Previous  string           `json:"previous"`
	Resolved  []LifecycleEntry `json:"resolved"`
	StillOpen []LifecycleEntry `json:"still_open"`
	New       []LifecycleEntry `json:"new"`
}

// Kinds of lifecycle entries.
const (
	KindFinding = "finding" // an analyzer's finding
	KindComment = "comment" // a model comment
)

// LifecycleEntry is one finding or model comment in a Lifecycle.
type LifecycleEntry struct {
	Kind        string           `json:"kind"`
	Path        string           `json:"path"`
	Line        int              `json:"line"`
	Fingerprint string           `json:"fingerprint"`
	Analyzer    string           `json:"analyzer,omitempty"`
	RuleID      string           `json:"rule_id,omitempty"`
	Severity    finding.Severity `json:"severity"`
	Message     string           `json:"message,omitempty"`
	// Since is the head where the finding was first reported, for still-open ones.
	Since string `json:"since,omitempty"`
	// CheckedBy says what was re-run (resolved entries), or why it could not be
	// (still-open entries that were not re-checked).
	CheckedBy string `json:"checked_by,omitempty"`
	// Head is the commit the re-check ran on (resolved entries).
	Head string `json:"head,omitempty"`
}

// CheckedDeleted is the CheckedBy of a finding resolved because its file was deleted.
const CheckedDeleted = "the file was deleted"

// Recheck is the answer of a Rechecker.
type Recheck struct {
	// Applies is false when the comment carries nothing that can be run again (no
	// evidence): it stays out of the lifecycle.
	Applies bool
	// Still: the check still reports the problem.
	Still bool
	// CheckedBy names what ran (e.g. the evidence's argv).
	CheckedBy string
}

// Rechecker re-checks a model comment of an earlier review on the new head, by running the
// evidence it carried again. The evidence runner implements it; nil leaves model comments
// out of the lifecycle.
type Rechecker interface {
	Recheck(ctx context.Context, c Comment) (Recheck, error)
}

// LifecycleOptions is the input of Classify beyond the two reports.
type LifecycleOptions struct {
	Rechecker Rechecker
}

// raised reports whether a finding is one a review raised on the change: reported, and an
// error or a warning (what is commented on; notes are only annotated).
func raised(m gate.Marked) bool {
	return m.Reported && (m.Severity == finding.Error || m.Severity == finding.Warning)
}

func findingEntry(m gate.Marked) LifecycleEntry {
	return LifecycleEntry{Kind: KindFinding, Path: m.Path, Line: m.StartLine, Fingerprint: m.Fingerprint,
		Analyzer: m.Analyzer, RuleID: m.RuleID, Severity: m.Severity, Message: m.Message}
}

func commentEntry(c Comment) LifecycleEntry {
	return LifecycleEntry{Kind: KindComment, Path: c.Path, Line: c.Line, Fingerprint: c.Fingerprint, Severity: c.Severity}
}

// ClassifyLifecycle re-checks the findings prev left open against cur, a review of a later head:
// a static finding is resolved when its analyzer ran on cur's head and no longer reports
// it (or its file was deleted), still open when it is reported again or could not be
// re-checked (its analyzer did not finish, its file was left out); a model comment is
// re-checked by opts.Rechecker. Findings cur raised that prev had not are new. Only
// identities (fingerprints) are compared, never line numbers, which move.
func ClassifyLifecycle(ctx context.Context, prev, cur *Report, opts LifecycleOptions) (*Lifecycle, error) {
	lc := &Lifecycle{Previous: prev.Head.SHA, Resolved: []LifecycleEntry{}, StillOpen: []LifecycleEntry{}, New: []LifecycleEntry{}}
	// What prev left open: what it raised, and what it carried from earlier reviews.
	var earlier []LifecycleEntry
	seen := map[string]bool{}
	add := func(e LifecycleEntry) {
		if e.Fingerprint != "" && !seen[e.Kind+e.Fingerprint] {
			seen[e.Kind+e.Fingerprint] = true
			earlier = append(earlier, e)
		}
	}
	if prev.Lifecycle != nil {
		for _, e := range prev.Lifecycle.StillOpen {
			add(e)
		}
	}
	for _, m := range prev.Findings {
		if raised(m) {
			e := findingEntry(m)
			e.Since = prev.Head.SHA
			add(e)
		}
	}
	prevComments := map[string]Comment{}
	for _, c := range prev.Model.Comments {
		if c.Fingerprint != "" {
			prevComments[c.Fingerprint] = c
			e := commentEntry(c)
			e.Since = prev.Head.SHA
			add(e)
		}
	}

	now := map[string]gate.Marked{}
	for _, m := range cur.Findings {
		if m.Fingerprint != "" {
			now[m.Fingerprint] = m
		}
	}
	ran := map[string]bool{}
	for _, a := range cur.Analyzers {
		ran[a.Name] = a.Status == gate.StatusOK
	}
	omitted := map[string]string{}
	for _, o := range cur.Files.Omitted {
		omitted[o.Path] = o.Reason
	}
	head := cur.Head.SHA
	for _, e := range earlier {
		switch e.Kind {
		case KindFinding:
			if m, ok := now[e.Fingerprint]; ok {
				if m.DismissedBy != "" {
					continue // a person dismissed it: neither open nor resolved
				}
				e.Path, e.Line = m.Path, m.StartLine
				lc.StillOpen = append(lc.StillOpen, e)
				continue
			}
			switch reason, left := omitted[e.Path]; {
			case reason == ReasonDeleted:
				e.CheckedBy, e.Head = CheckedDeleted, head
				lc.Resolved = append(lc.Resolved, e)
			case left:
				e.CheckedBy = "not re-checked: the file was left out of this review (" + reason + ")"
				lc.StillOpen = append(lc.StillOpen, e)
			case !ran[e.Analyzer]:
				e.CheckedBy = "not re-checked: " + e.Analyzer + " did not finish on this head"
				lc.StillOpen = append(lc.StillOpen, e)
			default:
				e.CheckedBy = fmt.Sprintf("re-ran %s %s on this file: no longer reported", e.Analyzer, e.RuleID)
				e.Head = head
				lc.Resolved = append(lc.Resolved, e)
			}
		case KindComment:
			c, ok := prevComments[e.Fingerprint]
			if !ok {
				// Carried from an earlier review: prev no longer has the comment to run.
				lc.StillOpen = append(lc.StillOpen, e)
				continue
			}
			if opts.Rechecker == nil {
				continue
			}
			rc, err := opts.Rechecker.Recheck(ctx, c)
			if err != nil {
				return nil, fmt.Errorf("re-check the model comment on %s:%d: %w", c.Path, c.Line, err)
			}
			if !rc.Applies {
				continue
			}
			e.CheckedBy = rc.CheckedBy
			if rc.Still {
				lc.StillOpen = append(lc.StillOpen, e)
				continue
			}
			e.Head = head
			lc.Resolved = append(lc.Resolved, e)
		}
	}
	for _, m := range cur.Findings {
		if raised(m) && m.Fingerprint != "" && !seen[KindFinding+m.Fingerprint] {
			lc.New = append(lc.New, findingEntry(m))
		}
	}
	for _, c := range cur.Model.Comments {
		if c.Fingerprint != "" && !seen[KindComment+c.Fingerprint] {
			lc.New = append(lc.New, commentEntry(c))
		}
	}
	return lc, nil
}

// MaxReportBytes caps a report read back (aster review --previous).
const MaxReportBytes = 64 << 20

// ReadReport reads a JSON report written by WriteJSON (aster review --format json), at
// most MaxReportBytes of it.
func ReadReport(r io.Reader) (*Report, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if len(b) > MaxReportBytes {
		return nil, fmt.Errorf("report larger than %d MiB", MaxReportBytes>>20)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("report is not the JSON of aster review --format json: %w", err)
	}
	if rep.Version != ReportVersion {
		return nil, fmt.Errorf("report version %d, want %d (write it with this aster's --format json)", rep.Version, ReportVersion)
	}
	if rep.Findings == nil && rep.Model.Comments == nil {
		return nil, errors.New("report has no findings list (not written by aster review --format json?)")
	}
	return &rep, nil
}

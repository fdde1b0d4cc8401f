package review

import (
	"context"
	"fmt"
	"strings"

	"github.com/asterhq/aster/internal/evidence"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/textclip"
)

// EvidenceChecker runs one model comment's evidence (evidence.Engine).
type EvidenceChecker interface {
	Verify(ctx context.Context, req evidence.Request) evidence.Verification
}

var _ EvidenceChecker = (*evidence.Engine)(nil)

// verifyComments runs the evidence of the model's comments, at most
// model.max_evidence_runs of them, and applies model.evidence: a refuted
// comment is dropped; under required so is every comment not confirmed;
// under preferred an unconfirmed comment stays, marked unverified. Each
// kept comment shows its verification under its body.
func verifyComments(ctx context.Context, ch *Change, cfg repoconfig.Config, m *ModelReport, opts Options) {
	mode := cfg.EvidenceMode()
	left := cfg.EvidenceRuns(opts.MaxEvidenceRuns)
	var kept []Comment
	confirmed, ran := 0, 0
	for _, c := range m.Comments {
		v := c.Verification // set already when the evidence was rejected
		switch {
		case v != nil:
		case c.Evidence == nil:
		case ctx.Err() != nil:
			v = notRun(c.Evidence, "the review was cancelled")
		case opts.Evidence == nil:
			v = notRun(c.Evidence, "no sandbox to run evidence in")
		case left <= 0:
			v = notRun(c.Evidence, fmt.Sprintf("over the cap of %d evidence runs per review (model.max_evidence_runs)", cfg.EvidenceRuns(opts.MaxEvidenceRuns)))
		default:
			left--
			ran++
			req := evidence.Request{Evidence: c.Evidence, Head: evidence.Target{Revision: ch.Head.SHA, Open: ch.OpenSnapshot},
				Setup: cfg.Tests.Setup, Repo: ch.CacheID, Scope: ch.CacheScope}
			if ch.OpenBaseSnapshot != nil {
				rev := ch.MergeBase
				if rev == "" {
					rev = ch.Base.SHA
				}
				req.Base = &evidence.Target{Revision: rev, Open: ch.OpenBaseSnapshot}
			}
			res := opts.Evidence.Verify(ctx, req)
			v = &res
		}
		c.Verification = v
		switch {
		case v != nil && v.Status == evidence.Confirmed:
			confirmed++
			c.Body += v.Markdown(nil)
		case v != nil && v.Status == evidence.Refuted:
			m.DroppedComments = append(m.DroppedComments, DroppedComment{Path: c.Path, Line: c.Line, Verification: v,
				Reason: textclip.OneLine(fmt.Sprintf("refuted by running %s on %s: %s", strings.Join(v.Argv, " "), headRev(v), v.Reason), maxReasonBytes)})
			continue
		case mode == repoconfig.EvidenceRequired:
			why := "no evidence"
			if v != nil {
				why = v.Reason
			}
			m.DroppedComments = append(m.DroppedComments, DroppedComment{Path: c.Path, Line: c.Line, Verification: v,
				Reason: textclip.OneLine("not verified: "+why+" (model.evidence: required)", maxReasonBytes)})
			continue
		case v != nil:
			c.Body += v.Markdown(nil)
		default:
			c.Body += "\n\n---\n**Unverified.** The model gave no evidence for this comment.\n"
		}
		kept = append(kept, c)
	}
	if kept == nil {
		kept = []Comment{}
	}
	m.Comments = kept
	m.Note = textclip.OneLine(fmt.Sprintf("%s; evidence (%s): %d run, %d confirmed", m.Note, mode, ran, confirmed), 1000)
}

func notRun(ev *evidence.Evidence, why string) *evidence.Verification {
	return &evidence.Verification{Status: evidence.Inconclusive, Reason: why, Expect: ev.Expect, Argv: ev.Argv, Files: ev.Paths()}
}

func headRev(v *evidence.Verification) string {
	if v.Head == nil || v.Head.Revision == "" {
		return "the head"
	}
	return "head " + ShortSHA(v.Head.Revision)
}

// EvidenceRechecker is the Rechecker of model comments: it runs a comment's evidence again
// over the new head alone. The claim no longer holding (refuted) resolves the comment; still
// holding, or a run that cannot say (inconclusive), keeps it open. At most Max comments are
// re-checked per review; the rest stay open, saying why.
type EvidenceRechecker struct {
	Checker EvidenceChecker
	// Head is the new head's tree; Setup, Repo and Scope are as for the review's own runs
	// (the tests' install step and dependency cache).
	Head        evidence.Target
	Setup       []string
	Repo, Scope string
	Max         int
	runs        int
}

var _ Rechecker = (*EvidenceRechecker)(nil)

// RecheckerFor is the Rechecker of a review of head configured by cfg: checker runs the
// evidence with the install step of cfg's tests in the dependency cache cacheID (scope), at
// most model.max_evidence_runs times under the operator's ceiling. Nil when no evidence runs
// (no checker, model.evidence: off): model comments then stay out of the lifecycle.
func RecheckerFor(checker EvidenceChecker, cfg repoconfig.Config, head evidence.Target, cacheID, scope string, ceiling int) Rechecker {
	if checker == nil || head.Open == nil || cfg.EvidenceMode() == repoconfig.EvidenceOff {
		return nil
	}
	return &EvidenceRechecker{Checker: checker, Head: head, Setup: cfg.Tests.Setup, Repo: cacheID, Scope: scope,
		Max: cfg.EvidenceRuns(ceiling)}
}

// Recheck implements Rechecker. It is called for one comment at a time.
func (r *EvidenceRechecker) Recheck(ctx context.Context, c Comment) (Recheck, error) {
	ev := c.Evidence
	if ev == nil || len(ev.Argv) == 0 {
		return Recheck{}, nil
	}
	argv := textclip.OneLine(strings.Join(ev.Argv, " "), 200)
	if r.runs >= r.Max {
		return Recheck{Applies: true, Still: true,
			CheckedBy: fmt.Sprintf("not re-checked: over the cap of %d evidence runs per review (model.max_evidence_runs)", r.Max)}, nil
	}
	if err := ctx.Err(); err != nil {
		return Recheck{}, err
	}
	r.runs++
	v := r.Checker.Verify(ctx, evidence.Request{Evidence: ev, Head: r.Head, Setup: r.Setup, Repo: r.Repo, Scope: r.Scope})
	switch v.Status {
	case evidence.Refuted:
		return Recheck{Applies: true, CheckedBy: argv}, nil
	case evidence.Confirmed:
		return Recheck{Applies: true, Still: true, CheckedBy: "re-ran " + argv + ": the claim still holds"}, nil
	default:
		return Recheck{Applies: true, Still: true, CheckedBy: textclip.OneLine("not re-checked: "+v.Reason, maxReasonBytes)}, nil
	}
}

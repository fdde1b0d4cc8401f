package publish

import (
	"fmt"

	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
)

// Resolution is a thread to close because the check that raised its finding was run
// again and no longer reports it: the forge adapter finds the thread Aster opened for ID,
// replies Reply in it once, and resolves it.
type Resolution struct {
	ID    string // the marker id of the thread's first comment
	Reply string // carries its resolved marker
}

// Resolutions are the threads to resolve for a review's lifecycle (none without one).
func Resolutions(lc *review.Lifecycle) []Resolution {
	if lc == nil {
		return nil
	}
	out := make([]Resolution, 0, len(lc.Resolved))
	for _, e := range lc.Resolved {
		id := EntryID(e)
		out = append(out, Resolution{ID: id, Reply: WithResolvedMarker(ResolvedReply(e), id)})
	}
	return out
}

// ResolvedReply is the text of the reply in a resolved thread: which commit fixed it and
// what was run to know.
func ResolvedReply(e review.LifecycleEntry) string {
	how := safetext.Escape(e.CheckedBy, 300)
	switch {
	case e.CheckedBy == review.CheckedDeleted:
	case e.Kind == review.KindFinding:
		// Built from its parts, each inert: the rule id comes from an analyzer's output.
		how = fmt.Sprintf("re-ran %s %s on this file: no longer reported", safetext.Escape(e.Analyzer, 60), safetext.Escape(e.RuleID, 120))
	case e.Kind == review.KindComment:
		how = fmt.Sprintf("re-ran its evidence %s: the claim no longer holds", safetext.Code(e.CheckedBy, 300))
	}
	return fmt.Sprintf("fixed in %s — %s", safetext.Code(review.ShortSHA(e.Head), 0), how)
}

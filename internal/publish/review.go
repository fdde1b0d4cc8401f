package publish

import (
	"fmt"
	"strings"

	"github.com/asterhq/aster/internal/safetext"
)

// DefaultMaxInline is how many inline comments one review carries unless told otherwise; the
// rest are folded into the review body.
const DefaultMaxInline = 30

// DefaultMaxBodyChars is the longest comment or review body a forge takes unless told
// otherwise (GitHub's limit).
const DefaultMaxBodyChars = 65536

// Comment is a review comment to publish: anchored to a line of the new side of the diff,
// already sanitised, and identified across pushes by its ID.
type Comment struct {
	Path      string
	Line      int
	StartLine int
	Body      string
	// ID is what the hidden marker carries (FindingIDs, CommentID); PlanReview refuses none,
	// but a comment without one is never recognised as posted.
	ID string
	// Aliases are older fingerprints this comment may have been posted under (a scheme
	// an upgrade replaced). A posted alias marker stands for one comment of a run: the
	// first one in plan order that carries it, which is then skipped; the others are new.
	Aliases []string
	// BodyOnly comments cannot be placed on a line of the diff (Line is where the
	// finding is, for the reader): they are listed in the review body, never inline.
	BodyOnly bool
}

// PlanOptions is the input of PlanReview.
type PlanOptions struct {
	Body         string          // the review's own text (before folded comments)
	Comments     []Comment       // in priority order: the first ones go inline
	Posted       map[string]bool // marker ids already on the pull request
	MaxInline    int             // 0 means DefaultMaxInline
	MaxBodyChars int             // 0 means DefaultMaxBodyChars
}

// Inline is a comment placed on its line, its body carrying its marker.
type Inline struct {
	Path      string
	Line      int
	StartLine int // > 0 makes it a multi-line comment ending at Line
	Body      string
}

// ReviewPlan is what to post, and what was held back and why.
type ReviewPlan struct {
	Inline  []Inline  // bodies carry their marker
	Folded  []Comment // past MaxInline, or BodyOnly: listed in Body, with their markers
	Skipped []Comment // already posted (or repeated within this run)
	Dropped []Comment // folded but cut because Body would pass MaxBodyChars
	Body    string
}

// Empty reports whether the plan has nothing new to say.
func (p ReviewPlan) Empty() bool {
	return len(p.Inline) == 0 && len(p.Folded) == 0 && strings.TrimSpace(p.Body) == ""
}

// PlanReview decides which comments go inline, which are folded into the body, and which are
// skipped because an earlier run already posted them. It is pure.
func PlanReview(opts PlanOptions) ReviewPlan {
	maxInline := opts.MaxInline
	if maxInline <= 0 {
		maxInline = DefaultMaxInline
	}
	maxBody := opts.MaxBodyChars
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyChars
	}
	var plan ReviewPlan
	seen := map[string]bool{}
	aliasUsed := map[string]bool{}
	for _, c := range opts.Comments {
		if c.ID != "" && (opts.Posted[c.ID] || seen[c.ID]) || postedAlias(c, opts.Posted, aliasUsed) {
			plan.Skipped = append(plan.Skipped, c)
			continue
		}
		seen[c.ID] = true
		if !c.BodyOnly && len(plan.Inline) < maxInline {
			plan.Inline = append(plan.Inline, Inline{
				Path: c.Path, Line: c.Line, StartLine: c.StartLine,
				Body: WithMarker(Truncate(c.Body, maxBody-len(fpOpen)-len(fpClose)-72), c.ID),
			})
			continue
		}
		plan.Folded = append(plan.Folded, c)
	}

	body := strings.TrimRight(safetext.StripMarkers(opts.Body), "\n")
	if len(plan.Folded) > 0 {
		var b strings.Builder
		b.WriteString(body)
		fmt.Fprintf(&b, "\n\n<details><summary>%d more comment(s) not posted inline</summary>\n\n", len(plan.Folded))
		const tail = "\n</details>"
		kept := plan.Folded[:0:0]
		for i, c := range plan.Folded {
			entry := foldedEntry(c)
			if b.Len()+len(entry)+len(tail)+200 > maxBody {
				plan.Dropped = append(plan.Dropped, plan.Folded[i:]...)
				fmt.Fprintf(&b, "\n…and %d more that do not fit in one review.\n", len(plan.Folded)-i)
				break
			}
			b.WriteString(entry)
			kept = append(kept, c)
		}
		b.WriteString(tail)
		plan.Folded = kept
		body = b.String()
	}
	plan.Body = body
	return plan
}

// postedAlias reports whether one of c's aliases is posted and not yet claimed by an
// earlier comment of the run, and claims it.
func postedAlias(c Comment, posted, used map[string]bool) bool {
	for _, a := range c.Aliases {
		if posted[a] && !used[a] {
			used[a] = true
			return true
		}
	}
	return false
}

// foldedEntry renders one folded comment as a list item that keeps its marker.
func foldedEntry(c Comment) string {
	loc := fmt.Sprintf("%s:%d", c.Path, c.Line)
	if c.Line <= 0 {
		loc = c.Path // a file-level finding
	}
	if c.StartLine > 0 && c.StartLine < c.Line {
		loc = fmt.Sprintf("%s:%d-%d", c.Path, c.StartLine, c.Line)
	}
	text := strings.TrimSpace(safetext.StripMarkers(c.Body))
	text = strings.ReplaceAll(text, "\n", "\n  ")
	marker := ""
	if c.ID != "" {
		marker = " " + fpOpen + c.ID + fpClose
	}
	return fmt.Sprintf("- `%s`: %s%s\n", strings.ReplaceAll(loc, "`", "'"), text, marker)
}

// Truncate cuts s to at most n bytes on a rune boundary, saying so.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const note = "\n\n…(truncated)"
	return safetext.Cut(s, n-len(note)) + note
}

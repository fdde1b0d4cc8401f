package app

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/github"
)

// CheckRunName is the name of Aster's check run.
const CheckRunName = "aster"

// Caps on what one post says.
const (
	maxSummaryFindings = 50
	maxSummarySkipped  = 30
	maxMessageChars    = 600
	maxCommentChars    = 8000
	maxAnnotationChars = 4000
)

// severityRank orders severities, most severe first.
func severityRank(s string) int {
	switch s {
	case "error":
		return 0
	case "warning":
		return 1
	case "note":
		return 2
	}
	return 3
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// findingFingerprints identifies each finding across pushes, aligned with fs. A finding
// from the pipeline carries the gate's fingerprint (the flagged line's text and the
// occurrence index, see finding.AssignFingerprints). One without (a Reviewer that does not
// compute them) is identified by what and where (file) it is, plus its occurrence index
// among the same; the first occurrence keeps the value that scheme always had.
func findingFingerprints(fs []Finding) []string {
	out := make([]string, len(fs))
	type keyed struct {
		key string
		i   int
	}
	var bare []keyed
	for i, f := range fs {
		if f.Fingerprint != "" {
			out[i] = github.Fingerprint("finding", f.Fingerprint)
			continue
		}
		bare = append(bare, keyed{key: f.Analyzer + "\x00" + f.Rule + "\x00" + f.Path + "\x00" + strings.Join(strings.Fields(f.Message), " "), i: i})
	}
	slices.SortStableFunc(bare, func(a, b keyed) int {
		return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(fs[a.i].StartLine, fs[b.i].StartLine))
	})
	n := 0
	for j, k := range bare {
		if j > 0 && bare[j-1].key == k.key {
			n++
		} else {
			n = 0
		}
		f := fs[k.i]
		parts := []string{"finding", f.Analyzer, f.Rule, f.Path, strings.Join(strings.Fields(f.Message), " ")}
		if n > 0 {
			parts = append(parts, "#"+strconv.Itoa(n))
		}
		out[k.i] = github.Fingerprint(parts...)
	}
	return out
}

// legacyFingerprint is the marker an Aster from before occurrence-aware fingerprints
// posted for f: it hashed analyzer, rule, path and message only, so one marker stood for
// every repeat of a message in a file (and only the first was ever posted). Markers of that
// kind stay on pull requests after an upgrade; github.Comment.Aliases lets one of them
// cover one finding, so an upgrade neither reposts what was posted nor hides what was new.
// "" when f's fingerprint is not of the current scheme (then it already is the old value).
func legacyFingerprint(f Finding) string {
	if !strings.HasPrefix(f.Fingerprint, "v2:") {
		return ""
	}
	return github.Fingerprint("finding", finding.LegacyFingerprint(finding.Finding{
		Analyzer: f.Analyzer, RuleID: f.Rule, Path: f.Path, Message: f.Message}))
}

func commentFingerprint(c Comment) string {
	if c.Fingerprint != "" {
		return github.Fingerprint("model", c.Fingerprint)
	}
	return github.Fingerprint("model", c.Path, strings.Join(strings.Fields(c.Body), " "))
}

// lineSet is new-side line numbers per path.
type lineSet map[string]map[int]bool

func (s lineSet) has(path string, n int) bool { return s[path][n] }

func hunkLines(files []*diff.File) lineSet {
	out := lineSet{}
	for _, f := range files {
		m := map[int]bool{}
		for _, n := range f.HunkLines() {
			m[n] = true
		}
		out[f.Path()] = m
	}
	return out
}

func addedLines(files []*diff.File) lineSet {
	out := lineSet{}
	for _, f := range files {
		m := map[int]bool{}
		for _, n := range f.AddedLines() {
			m[n] = true
		}
		out[f.Path()] = m
	}
	return out
}

// scope says where inline comments may go: lines inside the pull request's hunks (GitHub
// refuses anything else with a 422 that would lose the whole review) and, for an
// incremental review, lines the new commits touched.
type scope struct {
	anchor lineSet // hunk lines of the whole pull request's diff
	added  lineSet // lines the pull request added
	// incrAdded and incrHunks are the incremental diff's; nil for a full review.
	incrAdded lineSet
	incrHunks lineSet
}

// findingLine returns the line to anchor a finding to, or 0: the first line of its range
// that is in the pull request's hunks (and added by the new commits when incremental).
func (sc scope) findingLine(f Finding) int {
	return sc.firstLine(f, true)
}

// firstLine is the first line of f's range in the pull request's hunks (and, when
// newOnly and incremental, added by the new commits), or 0.
func (sc scope) firstLine(f Finding, newOnly bool) int {
	end := max(f.EndLine, f.StartLine)
	if end-f.StartLine > 500 {
		end = f.StartLine + 500
	}
	for n := f.StartLine; n <= end; n++ {
		if !sc.anchor.has(f.Path, n) {
			continue
		}
		if newOnly && sc.incrAdded != nil && !sc.incrAdded.has(f.Path, n) {
			continue
		}
		return n
	}
	return 0
}

// mayHavePosted reports whether an Aster of the legacy fingerprint scheme could have
// commented on f in an earlier review: f is on a line of the pull request's hunks and, in
// an incremental review, not on a line the new commits added (such a line did not exist
// then).
func (sc scope) mayHavePosted(f Finding) bool {
	if sc.firstLine(f, false) == 0 {
		return false
	}
	return sc.incrAdded == nil || sc.findingLine(f) == 0
}

// plan is what one run posts.
type plan struct {
	comments    []github.Comment // inline candidates, most important first
	annotations []github.Annotation
	// unanchored counts model comments that could not be placed on the diff.
	unanchored int
}

func buildPlan(out ReviewOutput, sc scope) plan {
	var p plan
	fps := findingFingerprints(out.Findings)
	order := make([]int, len(out.Findings))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return severityRank(out.Findings[a].Severity) - severityRank(out.Findings[b].Severity)
	})
	for _, i := range order {
		f := out.Findings[i]
		if !f.Reported {
			continue
		}
		p.annotations = append(p.annotations, annotation(f))
		if f.Severity != "error" && f.Severity != "warning" {
			continue // notes are annotated, not commented: less noise
		}
		// Every error and warning is a comment: inline on its line when the diff has it,
		// otherwise listed in the review body, so nothing new goes unsaid; the fingerprints
		// keep what an earlier review said from being said again.
		gc := github.Comment{Path: f.Path, Line: sc.findingLine(f), Body: findingBody(f), Fingerprint: fps[i]}
		if gc.Line == 0 {
			gc.Line, gc.BodyOnly = max(f.StartLine, 0), true
		}
		if old := legacyFingerprint(f); old != "" && sc.mayHavePosted(f) {
			gc.Aliases = []string{old}
		}
		p.comments = append(p.comments, gc)
	}
	comments := slices.Clone(out.Comments)
	slices.SortStableFunc(comments, func(a, b Comment) int { return severityRank(a.Severity) - severityRank(b.Severity) })
	for _, c := range comments {
		if !sc.anchor.has(c.Path, c.Line) || (sc.incrHunks != nil && !sc.incrHunks.has(c.Path, c.Line)) {
			p.unanchored++
			continue
		}
		gc := github.Comment{Path: c.Path, Line: c.Line, Body: commentBody(c), Fingerprint: commentFingerprint(c)}
		if c.EndLine > c.Line && sc.anchor.has(c.Path, c.EndLine) && sameHunkRun(sc.anchor, c.Path, c.Line, c.EndLine) {
			gc.StartLine, gc.Line = c.Line, c.EndLine
		}
		p.comments = append(p.comments, gc)
	}
	return p
}

// sameHunkRun reports whether every line from a to b is in the hunks (a multi-line comment
// may not span two hunks).
func sameHunkRun(s lineSet, path string, a, b int) bool {
	for n := a; n <= b; n++ {
		if !s.has(path, n) {
			return false
		}
	}
	return true
}

func annotation(f Finding) github.Annotation {
	level := "notice"
	switch f.Severity {
	case "error":
		level = "failure"
	case "warning":
		level = "warning"
	}
	msg := strings.TrimSpace(github.StripMarkers(cleanRunes(f.Message)))
	if msg == "" {
		msg = f.Rule
	}
	return github.Annotation{
		Path: f.Path, StartLine: max(f.StartLine, 1), EndLine: max(f.EndLine, f.StartLine, 1), Level: level,
		Title:   cutUTF8(cleanRunes(f.Analyzer+": "+f.Rule), 200),
		Message: cutUTF8(msg, maxAnnotationChars),
	}
}

func findingBody(f Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · %s %s\n\n%s", escapeText(f.Severity, 20), escapeText(f.Analyzer, 60), code(f.Rule, 120),
		escapeText(f.Message, maxMessageChars))
	if f.HelpURI != "" && allowedURL(f.HelpURI) {
		fmt.Fprintf(&b, "\n\n[More about %s](%s)", escapeText(f.Rule, 120), f.HelpURI)
	}
	return b.String()
}

func commentBody(c Comment) string {
	body := strings.TrimSpace(sanitizeMarkdown(c.Body, maxCommentChars))
	if c.Severity != "" {
		body = "**" + escapeText(c.Severity, 20) + "** · " + body
	}
	if s := c.Suggestion; s != "" && !strings.Contains(s, "```") {
		body += "\n\n```suggestion\n" + strings.TrimRight(cleanRunes(github.StripMarkers(s)), "\n") + "\n```"
	}
	return body
}

// summaryInput is everything the summary comment reports.
type summaryInput struct {
	Head, Since string
	Out         ReviewOutput
	Posted      postedInfo
}

func conclusionText(c string) string {
	switch c {
	case ConclusionSuccess:
		return "passed"
	case ConclusionFailure:
		return "failed"
	default:
		return "incomplete (neutral)"
	}
}

func countReported(fs []Finding) (n int, bySev map[string]int, outside int) {
	bySev = map[string]int{}
	for _, f := range fs {
		switch {
		case f.Reported:
			n++
			bySev[f.Severity]++
		case f.Suppressed == "":
			outside++ // suppressed ones are counted in the notes
		}
	}
	return n, bySev, outside
}

// renderSummary is the body of the summary comment, edited in place on every run.
func renderSummary(in summaryInput) string {
	out := in.Out
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## Aster review\n\n")
	scope := "the whole pull request"
	if in.Since != "" {
		scope = fmt.Sprintf("changes since %s", code(short(in.Since), 0))
	}
	p("Reviewed up to %s (%s). Check **%s** (fail on %s, filter %s).\n\n", code(short(in.Head), 0), scope,
		conclusionText(out.Conclusion), code(orDash(out.FailOn), 0), code(orDash(out.FilterMode), 0))

	n, bySev, outside := countReported(out.Findings)
	p("| | |\n|---|---|\n")
	p("| Findings on the change | %d (%d error, %d warning, %d note); %d outside the diff |\n",
		n, bySev["error"], bySev["warning"], bySev["note"], outside)
	p("| Comments | %d new inline, %d folded, %d already posted", in.Posted.Inline, in.Posted.Folded, in.Posted.Skipped)
	if in.Posted.Unanchored > 0 {
		p(", %d not on a changed line (dropped)", in.Posted.Unanchored)
	}
	p(" |\n")
	p("| Files | %d changed, %d reviewed, %d skipped |\n", out.FilesChanged, out.FilesReviewed, len(out.Skipped))
	if t := out.Tests; t != nil {
		p("| Tests | %s: %d passed, %d failed, %d skipped", escapeText(t.Status, 20), t.Passed, t.Failed, t.Skipped)
		if t.Reason != "" {
			p(" — %s", escapeText(t.Reason, 200))
		}
		p(" |\n")
	} else {
		p("| Tests | not run (no tests.command in the base .aster.yml) |\n")
	}
	m := out.Model
	p("| Model | %s", escapeText(orDash(m.Status), 20))
	if m.Provider != "" || m.Model != "" {
		p(" (%s %s)", escapeText(m.Provider, 40), escapeText(m.Model, 80))
	}
	if m.Note != "" {
		p(" — %s", escapeText(m.Note, 200))
	}
	p(" |\n")
	u := out.Usage
	p("| Tokens and cost | %d in, %d out, %d call(s), $%.4f |\n\n", u.InputTokens, u.OutputTokens, u.Calls, u.CostUSD)

	if s := strings.TrimSpace(out.ModelSummary); s != "" {
		p("### Summary\n\n%s\n\n", sanitizeMarkdown(s, 4000))
	}
	if n > 0 {
		p("### Findings on the change\n\n")
		shown := 0
		fs := slices.Clone(out.Findings)
		slices.SortStableFunc(fs, func(a, b Finding) int { return severityRank(a.Severity) - severityRank(b.Severity) })
		for _, f := range fs {
			if !f.Reported {
				continue
			}
			if shown == maxSummaryFindings {
				p("- …and %d more (see the check run's annotations)\n", n-shown)
				break
			}
			shown++
			p("- **%s** %s %s/%s — %s\n", escapeText(f.Severity, 20), code(fmt.Sprintf("%s:%d", f.Path, f.StartLine), 200),
				escapeText(f.Analyzer, 60), code(f.Rule, 120), escapeText(f.Message, 300))
		}
		p("\n")
	}
	if len(out.Analyzers) > 0 {
		p("### Analyzers\n\n| analyzer | version | status | findings | time | note |\n|---|---|---|---:|---:|---|\n")
		for _, a := range out.Analyzers {
			p("| %s | %s | %s | %d | %.1fs | %s |\n", escapeText(a.Name, 60), escapeText(cmp.Or(a.Version, "–"), 64), escapeText(a.Status, 30), a.Findings,
				float64(a.DurationMS)/1000, escapeText(a.Reason, 200))
		}
		p("\n")
	}
	if t := out.Tests; t != nil && len(t.Failures) > 0 {
		p("### Failing tests\n\n")
		for i, f := range t.Failures {
			if i == 20 {
				p("- …and %d more\n", len(t.Failures)-i)
				break
			}
			p("- %s\n", escapeText(f, 300))
		}
		p("\n")
	}
	if len(out.Skipped) > 0 {
		p("### Not reviewed\n\n")
		for i, s := range out.Skipped {
			if i == maxSummarySkipped {
				p("- …and %d more\n", len(out.Skipped)-i)
				break
			}
			p("- %s — %s\n", code(s.Path, 200), escapeText(s.Reason, 200))
		}
		p("\n")
	}
	if len(out.Notes) > 0 {
		p("### Notes\n\n")
		for _, n := range out.Notes {
			p("- %s\n", escapeText(n, 400))
		}
		p("\n")
	}
	p("<sub>Aster posts only COMMENT reviews: it never approves or requests changes. Comment `/aster review` to ask for a full re-review.</sub>\n")
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// checkOutput is the check run's title, summary and text.
func checkOutput(out ReviewOutput, head, since string) (title, summary, text string) {
	n, bySev, outside := countReported(out.Findings)
	switch {
	case out.Conclusion == ConclusionNeutral && n == 0:
		title = "Review incomplete"
	case n == 0:
		title = "No findings on the change"
	default:
		title = fmt.Sprintf("%d finding(s) on the change: %d error, %d warning, %d note", n, bySev["error"], bySev["warning"], bySev["note"])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Static checks on %s (%s): **%s**. The conclusion comes from the static checks", code(short(head), 0),
		map[bool]string{true: "changes since " + short(since), false: "whole pull request"}[since != ""], conclusionText(out.Conclusion))
	if out.Tests != nil {
		b.WriteString(" and the tests")
	}
	fmt.Fprintf(&b, " against fail on %s, never from the model. %d finding(s) outside the diff are not annotated (filter %s).\n",
		code(orDash(out.FailOn), 0), outside, code(orDash(out.FilterMode), 0))
	for _, note := range out.Notes {
		fmt.Fprintf(&b, "\n- %s", escapeText(note, 300))
	}
	summary = b.String()
	var t strings.Builder
	if len(out.Analyzers) > 0 {
		t.WriteString("| analyzer | version | status | findings | time |\n|---|---|---|---:|---:|\n")
		for _, a := range out.Analyzers {
			fmt.Fprintf(&t, "| %s | %s | %s | %d | %.1fs |\n", escapeText(a.Name, 60), escapeText(cmp.Or(a.Version, "–"), 64), escapeText(a.Status, 30), a.Findings, float64(a.DurationMS)/1000)
		}
	}
	if tr := out.Tests; tr != nil {
		fmt.Fprintf(&t, "\nTests: %s, %d passed, %d failed, %d skipped.\n", escapeText(tr.Status, 20), tr.Passed, tr.Failed, tr.Skipped)
	}
	return title, summary, t.String()
}

// reviewBody is the body of the review that carries the inline comments.
func reviewBody(head, since string) string {
	if since != "" {
		return fmt.Sprintf("Aster's comments on the changes since %s (up to %s); the summary comment has the rest.",
			code(short(since), 0), code(short(head), 0))
	}
	return fmt.Sprintf("Aster's comments on %s; the summary comment has the rest.", code(short(head), 0))
}

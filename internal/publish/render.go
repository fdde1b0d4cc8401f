package publish

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/testphase"
	"github.com/asterhq/aster/internal/testrun"
)

// What a review Report looks like on a pull request: the summary comment, the check run's output,
// the review's body and each inline comment. Every text from the repository, an analyzer or
// the model is escaped (safetext.Escape, safetext.Code) or was sanitised by the model step
// (safetext.Sanitize, once: sanitising model text again would rewrite the code blocks the
// first pass kept verbatim). Secrets are redacted before rendering (RedactReport), since
// escaping hides a secret's shape from the redactor.

// Caps on what one post says.
const (
	maxSummaryFindings = 50
	maxSummarySkipped  = 30
	maxMessageChars    = 600
)

// HelpLinkHosts are the hosts an analyzer's help link may point to in what the App posts
// ("More about RULE"): the documentation sites of the built-in analyzers and the weakness
// catalogues. A link elsewhere is left out. Model-written links obey llm.link_allowlist
// instead; both go through the one link rule (safetext.AllowedURL: http or https, the host
// or a subdomain of it, no credentials).
func HelpLinkHosts() []string {
	return []string{"github.com", "docs.github.com", "cwe.mitre.org", "owasp.org", "www.shellcheck.net",
		"bandit.readthedocs.io", "semgrep.dev", "gitleaks.io", "pkg.go.dev", "go.dev", "docs.python.org"}
}

// FindingComment is the body of the inline comment on a finding.
func FindingComment(m gate.Marked) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · %s %s\n\n%s", safetext.Escape(string(m.Severity), 20), safetext.Escape(m.Analyzer, 60),
		safetext.Code(m.RuleID, 120), safetext.Escape(m.Message, maxMessageChars))
	if len(m.Flow) > 0 {
		fmt.Fprintf(&b, "\n\nFlow: %s", review.CommentFlow(m.Finding))
	}
	if m.HelpURI != "" && safetext.AllowedURL(m.HelpURI, HelpLinkHosts()) {
		fmt.Fprintf(&b, "\n\n[More about %s](%s)", safetext.Escape(m.RuleID, 120), m.HelpURI)
	}
	return b.String()
}

// ModelComment is the body of the inline comment of a model comment: its body as the model
// step sanitised it, and its suggestion when it can be posted as one.
func ModelComment(c review.Comment) string {
	body := strings.TrimSpace(c.Body)
	if c.Severity != "" {
		body = "**" + safetext.Escape(string(c.Severity), 20) + "** · " + body
	}
	if s := c.Suggestion; s != "" && !strings.Contains(s, "```") {
		body += "\n\n```suggestion\n" + strings.TrimRight(s, "\n") + "\n```"
	}
	return body
}

// ReviewBody is the body of the review that carries the inline comments.
func ReviewBody(head, since string) string {
	if since != "" {
		return fmt.Sprintf("Aster's comments on the changes since %s (up to %s); the summary comment has the rest.",
			safetext.Code(review.ShortSHA(since), 0), safetext.Code(review.ShortSHA(head), 0))
	}
	return fmt.Sprintf("Aster's comments on %s; the summary comment has the rest.", safetext.Code(review.ShortSHA(head), 0))
}

// Posted counts what one run posted, for the summary.
type Posted struct {
	Inline     int `json:"inline"`
	Folded     int `json:"folded"`
	Skipped    int `json:"skipped"`
	Unanchored int `json:"unanchored"`
}

// SummaryOptions is what the summary comment says besides the report.
type SummaryOptions struct {
	// Head is the commit reviewed; Since the previous head of an incremental review.
	Head, Since string
	Posted      Posted
}

func checkText(c string) string {
	switch c {
	case review.CheckSuccess:
		return "passed"
	case review.CheckFailure:
		return "failed"
	default:
		return "incomplete (neutral)"
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// failureName is a failing test as the posts name it.
func failureName(f testrun.Failure) string {
	if f.Suite != "" {
		return f.Suite + ": " + f.Name
	}
	return f.Name
}

// notReviewed lists the files left out of the review, and why.
func notReviewed(rep *review.Report) []review.OmittedFile {
	out := slices.Clone(rep.Files.Omitted)
	for _, o := range rep.Model.OmittedFiles {
		out = append(out, review.OmittedFile{Path: o.Path, Reason: "left out of the model's budget: " + o.Reason})
	}
	return out
}

// Summary is the body of the summary comment, edited in place on every run.
func Summary(rep *review.Report, o SummaryOptions) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	esc, code := safetext.Escape, safetext.Code
	p("## Aster review\n\n")
	scope := "the whole pull request"
	if o.Since != "" {
		scope = fmt.Sprintf("changes since %s", code(review.ShortSHA(o.Since), 0))
	}
	p("Reviewed up to %s (%s). Check **%s** (fail on %s, filter %s).\n\n", code(review.ShortSHA(o.Head), 0), scope,
		checkText(rep.Conclusion.CheckConclusion()), code(orDash(rep.FailOn), 0), code(orDash(string(rep.FilterMode)), 0))

	s := gate.Summarize(rep.Findings)
	p("| | |\n|---|---|\n")
	p("| Findings on the change | %d (%d error, %d warning, %d note); %d outside the diff",
		s.Reported, s.BySeverity[finding.Error], s.BySeverity[finding.Warning], s.BySeverity[finding.Note], s.OutsideDiff)
	if s.Dismissed > 0 {
		p("; %d dismissed on this repository (not raised again)", s.Dismissed)
	}
	p(" |\n")
	p("| Comments | %d new inline, %d folded, %d already posted", o.Posted.Inline, o.Posted.Folded, o.Posted.Skipped)
	if o.Posted.Unanchored > 0 {
		p(", %d not on a changed line (dropped)", o.Posted.Unanchored)
	}
	p(" |\n")
	if lc := rep.Lifecycle; lc != nil {
		p("| Since %s | %d resolved (re-checked), %d still open, %d new |\n", code(review.ShortSHA(lc.Previous), 0),
			len(lc.Resolved), len(lc.StillOpen), len(lc.New))
	}
	skipped := notReviewed(rep)
	p("| Files | %d changed, %d reviewed, %d skipped", rep.Files.Changed, rep.Files.Reviewed, len(skipped))
	if n := len(rep.Files.NotAnalysed); n > 0 {
		p(", %d not analysed (%s)", n, esc(review.LanguageCounts(rep.Files.NotAnalysed), 300))
	}
	p(" |\n")
	if t := rep.Tests; t != nil {
		p("| Tests | %s: %d passed, %d failed, %d skipped", esc(t.Status, 20), t.Summary.Passed, t.Summary.Failed, t.Summary.Skipped)
		if t.TestDurationMS > 0 {
			p(" in %.1fs", float64(t.TestDurationMS)/1000)
		}
		if t.Reason != "" {
			p(" — %s", esc(t.Reason, 200))
		}
		p(" |\n")
		if in := t.Install; in != nil {
			p("| Dependencies | %s |\n", esc(testphase.Summary(in), 400))
		}
	} else {
		p("| Tests | not run (no tests.command in the base .aster.yml) |\n")
	}
	m := rep.Model
	p("| Model | %s", esc(orDash(m.Status), 20))
	if m.Provider != "" || m.Model != "" {
		p(" (%s %s)", esc(m.Provider, 40), esc(m.Model, 80))
	}
	if m.Note != "" {
		p(" — %s", esc(m.Note, 200))
	}
	p(" |\n")
	u := m.Usage
	p("| Tokens and cost | %d in, %d out, %d call(s), $%.4f |\n\n", u.InputTokens, u.OutputTokens, u.Calls, u.CostUSD)

	if sum := strings.TrimSpace(m.Summary); sum != "" {
		p("### Summary\n\n%s\n\n", sum) // sanitised by the model step
	}
	if s.Reported > 0 {
		p("### Findings on the change\n\n")
		shown, more := review.ReportedBySeverity(rep.Findings, maxSummaryFindings)
		for _, f := range shown {
			p("- **%s** %s %s/%s — %s\n", esc(string(f.Severity), 20), code(fmt.Sprintf("%s:%d", f.Path, f.StartLine), 200),
				esc(f.Analyzer, 60), code(f.RuleID, 120), esc(f.Message, 300))
		}
		if more > 0 {
			p("- …and %d more (see the check run's annotations)\n", more)
		}
		p("\n")
	}
	if lc := rep.Lifecycle; lc != nil && len(lc.StillOpen) > 0 {
		// Everything an earlier push raised that is still there, so nothing drips out
		// round by round: it was commented on then and is not posted again.
		p("### Still open from earlier pushes\n\n")
		for i, e := range lc.StillOpen {
			if i == maxSummaryFindings {
				p("- …and %d more (see the JSON report's lifecycle)\n", len(lc.StillOpen)-i)
				break
			}
			what := e.Analyzer + "/" + e.RuleID
			if e.Kind == review.KindComment {
				what = "model comment"
			}
			p("- **%s** %s %s since %s", esc(string(e.Severity), 20), code(fmt.Sprintf("%s:%d", e.Path, e.Line), 200), code(what, 180),
				code(review.ShortSHA(e.Since), 0))
			if e.CheckedBy != "" {
				p(" (%s)", esc(e.CheckedBy, 200))
			}
			p("\n")
		}
		p("\n")
	}
	if len(rep.Analyzers) > 0 {
		p("### Analyzers\n\n| analyzer | version | status | findings | time | note |\n|---|---|---|---:|---:|---|\n")
		for _, a := range rep.Analyzers {
			p("| %s | %s | %s | %d | %.1fs | %s |\n", esc(a.Name, 60), esc(cmp.Or(a.Version, "–"), 64), esc(string(a.Status), 30), a.Findings,
				float64(a.DurationMS)/1000, esc(a.Reason, 200))
		}
		p("\n")
	}
	if t := rep.Tests; t != nil && len(t.Summary.Failures) > 0 {
		p("### Failing tests\n\n")
		for i, f := range t.Summary.Failures {
			if i == 20 {
				p("- …and %d more\n", len(t.Summary.Failures)-i)
				break
			}
			p("- %s\n", esc(failureName(f), 300))
		}
		p("\n")
	}
	if len(skipped) > 0 {
		p("### Not reviewed\n\n")
		for i, s := range skipped {
			if i == maxSummarySkipped {
				p("- …and %d more\n", len(skipped)-i)
				break
			}
			p("- %s — %s\n", code(s.Path, 200), esc(s.Reason, 200))
		}
		p("\n")
	}
	if len(rep.Notes) > 0 {
		p("### Notes\n\n")
		for _, n := range rep.Notes {
			p("- %s\n", esc(n, 400))
		}
		p("\n")
	}
	p("<sub>Aster posts only COMMENT reviews: it never approves or requests changes. Comment `/aster review` to ask for a full re-review.</sub>\n")
	return b.String()
}

// CheckOutput is the check run's title, summary and text.
func CheckOutput(rep *review.Report, head, since string) (title, summary, text string) {
	esc, code := safetext.Escape, safetext.Code
	s := gate.Summarize(rep.Findings)
	conclusion := rep.Conclusion.CheckConclusion()
	switch {
	case conclusion == review.CheckNeutral && s.Reported == 0:
		title = "Review incomplete"
	case s.Reported == 0:
		title = "No findings on the change"
	default:
		title = fmt.Sprintf("%d finding(s) on the change: %d error, %d warning, %d note", s.Reported,
			s.BySeverity[finding.Error], s.BySeverity[finding.Warning], s.BySeverity[finding.Note])
	}
	var b strings.Builder
	scope := "whole pull request"
	if since != "" {
		scope = "changes since " + review.ShortSHA(since)
	}
	fmt.Fprintf(&b, "Static checks on %s (%s): **%s**. The conclusion comes from the static checks", code(review.ShortSHA(head), 0),
		scope, checkText(conclusion))
	if rep.Tests != nil {
		b.WriteString(" and the tests")
	}
	fmt.Fprintf(&b, " against fail on %s, never from the model. %d finding(s) outside the diff are not annotated (filter %s).\n",
		code(orDash(rep.FailOn), 0), s.OutsideDiff, code(orDash(string(rep.FilterMode)), 0))
	for _, note := range rep.Notes {
		fmt.Fprintf(&b, "\n- %s", esc(note, 300))
	}
	summary = b.String()
	var t strings.Builder
	if len(rep.Analyzers) > 0 {
		t.WriteString("| analyzer | version | status | findings | time |\n|---|---|---|---:|---:|\n")
		for _, a := range rep.Analyzers {
			fmt.Fprintf(&t, "| %s | %s | %s | %d | %.1fs |\n", esc(a.Name, 60), esc(cmp.Or(a.Version, "–"), 64), esc(string(a.Status), 30),
				a.Findings, float64(a.DurationMS)/1000)
		}
	}
	if tr := rep.Tests; tr != nil {
		fmt.Fprintf(&t, "\nTests: %s, %d passed, %d failed, %d skipped.\n", esc(tr.Status, 20), tr.Summary.Passed, tr.Summary.Failed, tr.Summary.Skipped)
		if in := tr.Install; in != nil {
			fmt.Fprintf(&t, "\nDependencies: %s.\n", esc(testphase.Summary(in), 400))
			if len(in.ErrorLines) > 0 {
				t.WriteString("\nFirst error lines of the install:\n\n")
				for _, l := range in.ErrorLines {
					fmt.Fprintf(&t, "- %s\n", esc(l, 300))
				}
			}
		}
	}
	return title, summary, t.String()
}

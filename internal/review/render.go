package review

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/testphase"
)

// Formats of a rendered report.
const (
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
	FormatSARIF    = "sarif"
)

// WriteJSON writes the full report.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// SARIFOptions tune WriteSARIF.
type SARIFOptions struct {
	ToolVersion string
	// Analyzers supply each analyzer's information URI.
	Analyzers []gate.Analyzer
}

// WriteSARIF writes the findings as SARIF 2.1.0, one run per analyzer.
// Findings outside the diff stay in the log as externally suppressed results
// (viewers hide them), so the log carries everything the report does.
func WriteSARIF(w io.Writer, rep *Report, opts SARIFOptions) error {
	runs := make([]finding.RunInfo, 0, len(rep.Analyzers))
	for _, a := range rep.Analyzers {
		ri := finding.RunInfo{Analyzer: a.Name, Version: a.Version, Succeeded: a.Status == gate.StatusOK || a.Status == gate.StatusSkipped}
		if a.Status != gate.StatusOK {
			ri.Message = string(a.Status) + ": " + a.Reason
		}
		if a.ExitCode >= 0 {
			code := a.ExitCode
			ri.ExitCode = &code
		}
		if def, ok := gate.Lookup(opts.Analyzers, a.Name); ok {
			ri.InformationURI = def.InformationURI
		}
		runs = append(runs, ri)
	}
	fs := make([]finding.Finding, len(rep.Findings))
	for i, m := range rep.Findings {
		fs[i] = m.Finding
	}
	return finding.WriteSARIF(w, fs, finding.WriteOptions{
		ToolVersion: opts.ToolVersion,
		Runs:        runs,
		SourceRoot:  rep.Repository,
		Suppressed: func(i int) string {
			m := rep.Findings[i]
			switch {
			case m.Reported:
				return ""
			case m.Suppressed != "":
				return fmt.Sprintf("Suppressed by the policy of path class %s (%s).", m.Suppressed, m.SuppressedBy)
			}
			return fmt.Sprintf("Outside the change (filter mode %s).", rep.FilterMode)
		},
		Properties: func(i int) map[string]any {
			m := rep.Findings[i]
			return map[string]any{"aster": map[string]any{
				"reported": m.Reported, "inDiffFile": m.InDiffFile, "inDiffContext": m.InDiffContext, "onAddedLine": m.OnAddedLine,
			}}
		},
	})
}

// maxMarkdownFindings bounds the findings listed in Markdown.
const maxMarkdownFindings = 200

// WriteMarkdown writes the report for a person: conclusion, analyzers,
// findings on the change, tests, model, omitted files and notes. Text from
// analyzers is escaped (no control characters, no bidi overrides).
func WriteMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Aster review: %s...%s (%s..%s)\n\n", inline(rep.Base.Ref), inline(rep.Head.Ref), ShortSHA(rep.Base.SHA), ShortSHA(rep.Head.SHA))
	if rep.Files.Changed == 0 && !rep.Files.DiffTruncated {
		// An empty report would read as a clean review; say what happened instead.
		p("**Nothing to review**: %s changes no file since its merge base with %s. No analyzer, test or model ran.\n", inline(rep.Head.Ref), inline(rep.Base.Ref))
		writeNotes(&b, rep.Notes, func(n string) bool { return strings.HasPrefix(n, NothingToReviewPrefix) })
		p("\nConfiguration: %s.\n", inline(rep.Config.Source))
		_, err := io.WriteString(w, b.String())
		return err
	}
	s := rep.Summary
	suppressed := ""
	if s.Suppressed > 0 {
		suppressed = fmt.Sprintf("%d suppressed by path class; ", s.Suppressed)
	}
	p("**Conclusion: %s** — %d finding%s on the change (%d error, %d warning, %d note); %s%d outside the diff (filter mode `%s`, fail on `%s`).\n\n",
		rep.Conclusion, s.Reported, plural(s.Reported), s.BySeverity[finding.Error], s.BySeverity[finding.Warning], s.BySeverity[finding.Note],
		suppressed, s.OutsideDiff, rep.FilterMode, rep.FailOn)

	p("## Analyzers\n\n| analyzer | version | status | findings | time | note |\n|---|---|---|---:|---:|---|\n")
	for _, a := range rep.Analyzers {
		note := a.Reason
		if len(a.ToolErrors) > 0 {
			note = strings.TrimSpace(note + " tool errors: " + strings.Join(a.ToolErrors, "; "))
		}
		note = strings.TrimSpace(note + " " + analyzerNotes(a))
		version := a.Version
		if version == "" {
			version = "–"
		}
		p("| %s | %s | %s | %d | %.1fs | %s |\n", inline(a.Name), cell(version), a.Status, a.Findings, float64(a.DurationMS)/1000, cell(note))
	}
	if len(rep.Analyzers) == 0 {
		p("| – | | no analyzer ran | | | |\n")
	}
	b.WriteString("\n")

	p("## Findings on the change (%d)\n\n", s.Reported)
	// Most severe first: errors, then warnings, then notes; file order within each.
	shown, more := ReportedBySeverity(rep.Findings, maxMarkdownFindings)
	for _, m := range shown {
		cwe := ""
		if len(m.CWE) > 0 {
			cwe = " (" + inline(strings.Join(m.CWE, ", ")) + ")"
		}
		also := ""
		if len(m.Also) > 0 {
			also = " (also " + inline(strings.Join(m.Also, ", ")) + ")"
		}
		p("- **%s** `%s` %s/%s%s%s — %s\n", m.Severity, inline(m.Location()), inline(m.Analyzer), inline(m.RuleID), cwe, also, inline(safetext.Clip(m.Message, 400)))
		if len(m.Flow) > 0 {
			p("  flow: %s\n", markdownFlow(m.Finding))
		}
		if m.HelpURI != "" {
			p("  (%s)\n", inline(m.HelpURI))
		}
	}
	if more > 0 {
		p("- … and %d more (see --format json)\n", more)
	}
	if s.Reported == 0 {
		b.WriteString("No finding on the change.\n")
	}
	if s.Suppressed > 0 {
		p("\n%d finding%s on the change suppressed by path-class policy: %s (`classes:` in .aster.yml changes it).\n",
			s.Suppressed, plural(s.Suppressed), inline(strings.Join(gate.SuppressedText(s), "; ")))
	}
	if s.OutsideDiff > 0 {
		p("\n%d finding%s outside the diff %s not shown (`--filter-mode nofilter` shows them; `--format json` lists them marked).\n", s.OutsideDiff, plural(s.OutsideDiff), isAre(s.OutsideDiff))
	}
	b.WriteString("\n")

	if lc := rep.Lifecycle; lc != nil {
		writeLifecycle(&b, lc)
	}

	if t := rep.Tests; t != nil {
		p("## Tests: %s\n\n", t.Status)
		if in := t.Install; in != nil {
			// Which phase failed and why, what was downloaded, the cache, the time per phase.
			var errLines []string
			for _, l := range testphase.Lines(in) {
				if e, ok := strings.CutPrefix(l, "  "); ok {
					errLines = append(errLines, e)
					continue
				}
				p("- %s\n", inline(l))
			}
			if len(errLines) > 0 {
				b.WriteString("\n  ```text\n")
				for _, l := range errLines {
					p("  %s\n", inline(safetext.Clip(l, 300)))
				}
				b.WriteString("  ```\n")
			}
			b.WriteString("\n")
		}
		if len(t.Command) > 0 && (t.Install == nil || t.Install.Status != api.InstallFailed) {
			p("`%s` — %d passed, %d failed, %d skipped (%.1fs)\n", inline(strings.Join(t.Command, " ")), t.Summary.Passed, t.Summary.Failed, t.Summary.Skipped, float64(testSeconds(t))/1000)
		}
		if t.Reason != "" {
			p("\n%s\n", inline(t.Reason))
		}
		for i, f := range t.Summary.Failures {
			if i == maxFailuresListed {
				p("- … and %d more\n", t.Summary.Failed-i)
				break
			}
			name := f.Name
			if f.Suite != "" && f.Suite != f.Name {
				name = f.Suite + ": " + f.Name
			}
			if i >= maxFailuresShown {
				p("- `%s`\n", inline(name))
				continue
			}
			p("- `%s`\n", inline(name))
			if lines := failureLines(f.Message); len(lines) > 0 {
				b.WriteString("\n  ```text\n")
				for _, l := range lines {
					p("  %s\n", inline(safetext.Clip(l, 300)))
				}
				b.WriteString("  ```\n\n")
			}
		}
		b.WriteString("\n")
	}

	p("## Model review: %s\n\n", rep.Model.Status)
	if rep.Model.Note != "" {
		p("%s\n", inline(rep.Model.Note))
	}
	if rep.Model.Summary != "" {
		p("\n%s\n", rep.Model.Summary)
	}
	// Errors first here too, then warnings, then notes; the model's order within each.
	comments := slices.Clone(rep.Model.Comments)
	slices.SortStableFunc(comments, func(a, b Comment) int { return b.Severity.Rank() - a.Severity.Rank() })
	for _, c := range comments {
		p("- **%s** `%s:%d` %s\n", c.Severity, inline(c.Path), c.Line, inline(safetext.Clip(c.Body, 600)))
	}
	if u := rep.Model.Usage; u.Calls > 0 {
		p("\n%d call%s, %d input and %d output tokens, $%.4f\n", u.Calls, plural(u.Calls), u.InputTokens, u.OutputTokens, u.CostUSD)
	}
	if n := len(rep.Model.DroppedComments); n > 0 {
		p("\n%d model comment%s dropped (not on a line of the diff, or invalid).\n", n, plural(n))
	}
	b.WriteString("\n")

	p("## Files\n\n%d changed, %d reviewed.\n", rep.Files.Changed, rep.Files.Reviewed)
	if len(rep.Files.NotAnalysed) > 0 {
		p("\n%s\n", NotAnalysedText(rep.Files.NotAnalysed))
		for i, f := range rep.Files.NotAnalysed {
			if i == 50 {
				p("- … and %d more not analysed\n", len(rep.Files.NotAnalysed)-i)
				break
			}
			p("- not analysed `%s` (no analyzer for %s)\n", inline(f.Path), inline(f.Language))
		}
	}
	for i, o := range rep.Files.Omitted {
		if i == 50 {
			p("- … and %d more omitted\n", len(rep.Files.Omitted)-i)
			break
		}
		p("- omitted `%s`: %s\n", inline(o.Path), o.Reason)
	}
	for _, o := range rep.Model.OmittedFiles {
		p("- left out of the model's prompt `%s`: %s\n", inline(o.Path), inline(o.Reason))
	}
	writeNotes(&b, rep.Notes, func(n string) bool { return strings.HasPrefix(n, SuppressedNotePrefix) })
	p("\nConfiguration: %s.\n", inline(rep.Config.Source))
	_, err := io.WriteString(w, b.String())
	return err
}

// writeNotes lists the notes, less those skip says are already said.
func writeNotes(b *strings.Builder, notes []string, skip func(string) bool) {
	var kept []string
	for _, n := range notes {
		if skip == nil || !skip(n) {
			kept = append(kept, n)
		}
	}
	if len(kept) == 0 {
		return
	}
	b.WriteString("\n## Notes\n\n")
	for _, n := range kept {
		fmt.Fprintf(b, "- %s\n", inline(n))
	}
}

// How much of the failing tests Markdown shows: the first maxFailuresShown with the first
// lines of their output, names only up to maxFailuresListed.
const (
	maxFailuresShown  = 3
	maxFailuresLines  = 8
	maxFailuresListed = 20
)

// failureLines picks what a reader needs from a failure's output: its first lines, and the
// lines that state the error when they come later (pytest marks them "E   ", Python ends a
// traceback with "SomethingError: ..."), at most maxFailuresLines in all.
func failureLines(msg string) []string {
	var all []string
	for _, l := range strings.Split(strings.TrimSpace(msg), "\n") {
		if l = strings.TrimRight(l, " \t\r"); l != "" {
			all = append(all, l)
		}
	}
	if len(all) <= maxFailuresLines {
		return all
	}
	head := 3
	var stated []int
	for i := head; i < len(all); i++ {
		if statesError(all[i]) {
			stated = append(stated, i)
		}
	}
	if len(stated) == 0 {
		return all[:maxFailuresLines]
	}
	out := slices.Clone(all[:head])
	if len(stated) > maxFailuresLines-head-1 {
		stated = stated[:maxFailuresLines-head-1]
	}
	last := head - 1
	for _, i := range stated {
		if i > last+1 {
			out = append(out, "…")
		}
		out = append(out, all[i])
		last = i
	}
	return out
}

// statesError reports whether a line of test output states an error rather than
// locating it.
func statesError(l string) bool {
	t := strings.TrimSpace(l)
	if strings.HasPrefix(l, "E ") {
		return true
	}
	name, _, ok := strings.Cut(t, ":")
	return ok && !strings.ContainsAny(name, " /()") && (strings.HasSuffix(name, "Error") || strings.HasSuffix(name, "Exception")) ||
		strings.HasPrefix(t, "panic:")
}

// inline escapes text for one line of Markdown in a terminal: control and
// bidi/invisible characters become \u escapes, backticks become quotes.
func inline(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '`':
			b.WriteByte('\'')
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case safetext.Hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(inline(s), "|", `\|`) }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// testSeconds is the test phase's time in milliseconds (the whole step's
// for a report without phases).
func testSeconds(t *TestsReport) int64 {
	if t.TestDurationMS > 0 {
		return t.TestDurationMS
	}
	return t.DurationMS
}

// writeLifecycle renders what became of the earlier review's findings.
func writeLifecycle(b *strings.Builder, lc *Lifecycle) {
	fmt.Fprintf(b, "## Since %s: %d resolved, %d still open, %d new\n\n", inline(ShortSHA(lc.Previous)), len(lc.Resolved), len(lc.StillOpen), len(lc.New))
	for _, group := range []struct {
		name string
		es   []LifecycleEntry
	}{{"resolved", lc.Resolved}, {"still open", lc.StillOpen}, {"new", lc.New}} {
		for i, e := range group.es {
			if i == maxMarkdownFindings {
				fmt.Fprintf(b, "- … and %d more %s (see --format json)\n", len(group.es)-i, group.name)
				break
			}
			what := e.Analyzer + "/" + e.RuleID
			if e.Kind == KindComment {
				what = "model comment"
			}
			fmt.Fprintf(b, "- %s `%s:%d` %s", group.name, inline(e.Path), e.Line, inline(what))
			if e.CheckedBy != "" {
				fmt.Fprintf(b, " — %s", inline(safetext.Clip(e.CheckedBy, 300)))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

package bench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
)

// reviewColumns head the benchmark's table.
var reviewColumns = []string{"repo", "change", "files", "lines +/-", "reported", "error", "warning", "note",
	"by analyzer", "suppressed", "outside diff", "not ok", "wall", "injections found", "all found", "unexpected"}

// PrintReviewTable writes the report as one table (Markdown when markdown
// is set, else aligned text), then, for each repository with an expected
// list, the entries it missed.
func PrintReviewTable(w io.Writer, rep *ReviewReport, markdown bool) {
	rows := [][]string{}
	for _, r := range rep.Repos {
		rows = append(rows, reviewRow(r))
	}
	if markdown {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(reviewColumns, " | "), strings.Repeat("---|", len(reviewColumns)))
		for _, row := range rows {
			for i, c := range row {
				row[i] = strings.ReplaceAll(c, "|", `\|`)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(reviewColumns, "\t"))
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	if rep.Last > 0 {
		fmt.Fprintf(w, "\n%s\n", NoiseSummary(rep))
	}
	for _, r := range rep.Repos {
		if r.Error != "" {
			fmt.Fprintf(w, "\n%s: not reviewed: %s\n", r.Name, r.Error)
		}
		for _, a := range r.Analyzers {
			if a.Status != gate.StatusOK && a.Status != gate.StatusSkipped {
				fmt.Fprintf(w, "\n%s: %s %s: %s\n", r.Name, a.Name, a.Status, a.Reason)
			}
		}
		if rules := topRules(r.Findings, 8); rules != "" {
			fmt.Fprintf(w, "\n%s, most reported rules: %s\n", r.Name, rules)
		}
		if cost := engineCost(r.Analyzers); cost != "" {
			fmt.Fprintf(w, "\n%s, taint engines: %s\n", r.Name, cost)
		}
		if r.Recall == nil {
			continue
		}
		rc := r.Recall
		if len(rc.Missed) > 0 {
			fmt.Fprintf(w, "\n%s missed %d of %d expected:\n", r.Name, len(rc.Missed), rc.Expected)
			for _, e := range rc.Missed {
				mark := ""
				if e.Injection() {
					mark = " (injection)"
				}
				fmt.Fprintf(w, "%s %s %s: %s%s\n", bullet(markdown), e.Location(), e.CWE, e.What, mark)
			}
		}
		if len(rc.OffChange) > 0 {
			fmt.Fprintf(w, "\n%s: %d expected entries are not on an added line of the change (the list is wrong):\n", r.Name, len(rc.OffChange))
			for _, e := range rc.OffChange {
				fmt.Fprintf(w, "%s %s %s\n", bullet(markdown), e.Location(), e.CWE)
			}
		}
	}
}

func bullet(markdown bool) string {
	if markdown {
		return "-"
	}
	return " "
}

func reviewRow(r RepoReview) []string {
	if r.Error != "" {
		row := make([]string, len(reviewColumns))
		row[0], row[1] = r.Name, "error"
		for i := 2; i < len(row); i++ {
			row[i] = "–"
		}
		return row
	}
	change := "tree " + review.ShortSHA(r.Change.Head)
	switch r.Change.Kind {
	case ChangeCommit:
		change = review.ShortSHA(r.Change.Base) + ".." + review.ShortSHA(r.Change.Head)
	case ChangeLast:
		change = "last: " + review.ShortSHA(r.Change.Base) + ".." + review.ShortSHA(r.Change.Head)
	}
	var notOK []string
	for _, a := range r.Analyzers {
		if a.Status != gate.StatusOK && a.Status != gate.StatusSkipped {
			notOK = append(notOK, a.Name+" "+string(a.Status))
		}
	}
	row := []string{
		r.Name, change,
		fmt.Sprintf("%d (%d reviewed)", r.Change.Files, r.Change.Reviewed),
		fmt.Sprintf("+%d/-%d", r.Change.Added, r.Change.Deleted),
		fmt.Sprint(r.Reported),
		fmt.Sprint(r.BySeverity[string(finding.Error)]),
		fmt.Sprint(r.BySeverity[string(finding.Warning)]),
		fmt.Sprint(r.BySeverity[string(finding.Note)]),
		byAnalyzer(r.ByAnalyzer),
		fmt.Sprint(r.Suppressed),
		fmt.Sprint(r.OutsideDiff),
		orDash(strings.Join(notOK, ", ")),
		fmt.Sprintf("%.1fs", float64(r.WallMS)/1000),
		"–", "–", "–",
	}
	if rc := r.Recall; rc != nil {
		row[13] = fmt.Sprintf("%d/%d", rc.InjectionsFound, rc.Injections)
		row[14] = fmt.Sprintf("%d/%d", rc.Found, rc.Expected)
		row[15] = fmt.Sprint(rc.Unexpected)
	}
	return row
}

// topRules renders the n rules with the most reported findings, as
// "bandit B101 174, shellcheck SC2086 4".
func topRules(fs []gate.Marked, n int) string {
	counts := map[string]int{}
	for _, f := range fs {
		counts[f.Analyzer+" "+f.RuleID]++
	}
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b)) })
	parts := make([]string, 0, n)
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

// byAnalyzer renders counts as "bandit 12, shellcheck 3", largest first.
func byAnalyzer(m map[string]int) string {
	names := slices.Collect(maps.Keys(m))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, m[n])
	}
	return orDash(strings.Join(parts, ", "))
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// NoiseSummary totals a --last run: on well-kept code every error and
// warning the gate reports is noise.
func NoiseSummary(rep *ReviewReport) string {
	var errs, warns, notes, repos, failed int
	for _, r := range rep.Repos {
		if r.Error != "" {
			failed++
			continue
		}
		repos++
		errs += r.BySeverity[string(finding.Error)]
		warns += r.BySeverity[string(finding.Warning)]
		notes += r.BySeverity[string(finding.Note)]
	}
	s := fmt.Sprintf("noise, the last %d commits of %d repositories: %d error(s), %d warning(s), %d note(s) reported", rep.Last, repos, errs, warns, notes)
	if failed > 0 {
		s += fmt.Sprintf("; %d repositories not reviewed", failed)
	}
	return s
}

// engineCost renders the taint engines' own account of their runs: files,
// wall and CPU time, the mean per file, peak memory and the slowest file.
func engineCost(as []gate.AnalyzerResult) string {
	var parts []string
	for _, a := range as {
		st := a.Stats
		if st == nil || a.Status != gate.StatusOK || st.Files == 0 {
			continue
		}
		p := fmt.Sprintf("%s %d files in %.1fs", a.Name, st.Files, float64(st.MS)/1000)
		if st.CPUMS > 0 {
			p += fmt.Sprintf(" (CPU %.1fs, %d ms a file)", float64(st.CPUMS)/1000, st.CPUMS/int64(st.Files))
		} else {
			p += fmt.Sprintf(" (%d ms a file)", st.MS/int64(st.Files))
		}
		p += fmt.Sprintf(", %d MB peak", st.MaxRSSKB/1024)
		if st.Slowest != "" {
			p += fmt.Sprintf(", slowest %s %d ms", st.Slowest, st.MaxFileMS)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

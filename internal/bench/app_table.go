package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// PrintApp writes the App benchmark's table: one row per store and pull
// request count.
func PrintApp(w io.Writer, r *AppReport) {
	fmt.Fprintf(w, "aster app serve under load — %d cores, load %v → %v", r.Cores, r.LoadBefore, r.LoadAfter)
	if r.Workers > 0 {
		fmt.Fprintf(w, ", --workers %d", r.Workers)
	}
	if len(r.ServeArgs) > 0 {
		fmt.Fprintf(w, ", app serve %s", strings.Join(r.ServeArgs, " "))
	}
	fmt.Fprintln(w)
	for _, s := range r.Sources {
		fmt.Fprintf(w, "  code from %s: base %.12s (%d files), tip %.12s (%d source files changed)\n", s.Bundle, s.Base, s.BaseFiles, s.Tip, s.Changed)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tPRs\tfiles\taccepted in ms\treviewed\tp50 s\tp95 s\tp99 s\tmax s\twait p50 s\treview p50 s\treview p95 s\treviews/min\tidle RSS MiB\tpeak RSS MiB\tsandboxes peak\tmean\tslots\t")
	for _, c := range r.Cells {
		if c.Error != "" && c.Reviewed == 0 {
			fmt.Fprintf(tw, "%s\t%d\t%d\t\t%s\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", c.Store, c.PRs, c.FilesPerPR, "failed")
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%.0f\t%.0f\t%d\t%.1f\t%d\t\n", c.Store, c.PRs, c.FilesPerPR, c.DeliverMS, c.Reviewed,
			c.Latency.P50MS/1000, c.Latency.P95MS/1000, c.Latency.P99MS/1000, c.MaxMS/1000, c.Wait.P50MS/1000, c.Review.P50MS/1000, c.Review.P95MS/1000, c.ReviewsPerMin,
			float64(c.IdleRSSBytes)/(1<<20), float64(c.PeakRSSBytes)/(1<<20), c.PeakSandboxes, c.MeanSandboxes, c.SandboxSlots)
	}
	tw.Flush()
	for _, c := range r.Cells {
		if len(c.Conclusions) > 0 && c.Conclusions["success"] != c.Reviewed {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(c.Conclusions)) {
				parts = append(parts, fmt.Sprintf("%d %s", c.Conclusions[k], k))
			}
			fmt.Fprintf(w, "  %s, %d pull requests: check runs %s (neutral: the review could not finish, an analyzer or the tests; the summary says which)\n",
				c.Store, c.PRs, strings.Join(parts, ", "))
			for _, title := range c.Unfinished {
				fmt.Fprintf(w, "    %q\n", title)
			}
		}
		if c.Error != "" {
			first, _, _ := strings.Cut(c.Error, "\n")
			fmt.Fprintf(w, "  %s, %d pull requests: %s\n", c.Store, c.PRs, first)
		}
	}
}

package publish_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/publish"
)

func TestFingerprintMarkersRoundTrip(t *testing.T) {
	t.Parallel()
	fp := finding.Fingerprint("main.go", "G104", "error ignored")
	if len(fp) != 32 || fp != finding.Fingerprint("main.go", "G104", "error ignored") {
		t.Fatalf("fingerprint %q not stable", fp)
	}
	if finding.Fingerprint("ab", "c") == finding.Fingerprint("a", "bc") {
		t.Error("part boundaries do not count")
	}
	body := publish.WithMarker("Check the error.", fp)
	if diff := cmp.Diff([]string{fp}, publish.Markers(body)); diff != "" {
		t.Errorf("parsed back (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(body, "Check the error.") {
		t.Errorf("body changed: %q", body)
	}
	// A body that already carries markers (a model echoing one, a quoted comment) loses them.
	smuggled := "Fine.\n<!-- aster:fp=" + strings.Repeat("0", 32) + " -->\n<!-- aster:summary -->"
	got := publish.Markers(publish.WithMarker(smuggled, fp))
	if diff := cmp.Diff([]string{fp}, got); diff != "" {
		t.Errorf("smuggled markers kept (-want +got):\n%s", diff)
	}
	if publish.IsSummary(publish.WithMarker(smuggled, fp)) {
		t.Error("summary marker survived")
	}
}

func TestSummaryMarker(t *testing.T) {
	t.Parallel()
	s := publish.WithSummaryMarker("## Aster\nreviewed up to abc")
	if !publish.IsSummary(s) || publish.IsSummary("## Aster") || publish.IsSummary("quote: "+s) {
		t.Errorf("summary marker detection wrong for %q", s)
	}
	if strings.Count(publish.WithSummaryMarker(s), publish.SummaryMarker) != 1 {
		t.Error("marker doubled")
	}
}

func comments(n int) []publish.Comment {
	out := make([]publish.Comment, n)
	for i := range out {
		out[i] = publish.Comment{Path: "main.go", Line: i + 1, Body: fmt.Sprintf("finding %d", i), ID: finding.Fingerprint(fmt.Sprint(i))}
	}
	return out
}

func TestPlanReview(t *testing.T) {
	t.Parallel()
	all := comments(40)
	posted := map[string]bool{all[0].ID: true, all[5].ID: true}
	tests := []struct {
		name                          string
		opts                          publish.PlanOptions
		inline, folded, skipped, drop int
	}{
		{name: "empty", opts: publish.PlanOptions{}},
		{name: "under the cap", opts: publish.PlanOptions{Comments: all[:10]}, inline: 10},
		{name: "exactly the cap", opts: publish.PlanOptions{Comments: all[:30]}, inline: 30},
		{name: "over the cap folds", opts: publish.PlanOptions{Comments: all}, inline: 30, folded: 10},
		{name: "already posted skipped", opts: publish.PlanOptions{Comments: all, Posted: posted}, inline: 30, folded: 8, skipped: 2},
		{name: "repeats within a run skipped", opts: publish.PlanOptions{Comments: append(all[:3:3], all[:3]...)}, inline: 3, skipped: 3},
		{name: "custom cap", opts: publish.PlanOptions{Comments: all[:10], MaxInline: 4}, inline: 4, folded: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := publish.PlanReview(tc.opts)
			got := []int{len(p.Inline), len(p.Folded), len(p.Skipped), len(p.Dropped)}
			if diff := cmp.Diff([]int{tc.inline, tc.folded, tc.skipped, tc.drop}, got); diff != "" {
				t.Fatalf("inline, folded, skipped, dropped (-want +got):\n%s", diff)
			}
			for _, ic := range p.Inline {
				if len(publish.Markers(ic.Body)) != 1 {
					t.Errorf("inline comment without exactly one marker: %q", ic.Body)
				}
			}
			// Every folded comment is in the body with its marker, so the next run skips it.
			fps := map[string]bool{}
			for _, fp := range publish.Markers(p.Body) {
				fps[fp] = true
			}
			for _, c := range p.Folded {
				if !fps[c.ID] || !strings.Contains(p.Body, c.Body) {
					t.Errorf("folded %q not in the body with its marker", c.Body)
				}
			}
		})
	}
}

func TestPlanReviewKeepsBodyUnderLimit(t *testing.T) {
	t.Parallel()
	big := comments(500)
	for i := range big {
		big[i].Body = strings.Repeat("long text ", 100) + fmt.Sprint(i)
	}
	huge := strings.Repeat("é", publish.DefaultMaxBodyChars) // multi-byte: truncation must not split a rune
	big[0].Body = huge
	p := publish.PlanReview(publish.PlanOptions{Body: "summary", Comments: big})
	if len(p.Body) > publish.DefaultMaxBodyChars {
		t.Errorf("review body %d bytes, the limit is %d", len(p.Body), publish.DefaultMaxBodyChars)
	}
	if len(p.Dropped) == 0 || len(p.Folded)+len(p.Dropped) != 470 {
		t.Errorf("folded %d dropped %d, want 470 in total with some dropped", len(p.Folded), len(p.Dropped))
	}
	if !strings.Contains(p.Body, "do not fit") {
		t.Error("body does not say comments were left out")
	}
	first := p.Inline[0].Body
	if len(first) > publish.DefaultMaxBodyChars || len(publish.Markers(first)) != 1 || !strings.Contains(first, "truncated") {
		t.Errorf("huge inline body: %d bytes, markers %v", len(first), publish.Markers(first))
	}
	if !strings.HasPrefix(first, "éé") || strings.ContainsRune(first, '\uFFFD') {
		t.Error("truncation broke UTF-8")
	}
}

// TestPlanAliasesAndBodyOnly: a posted alias (an older fingerprint scheme) stands for one
// comment only, the first that carries it; a body-only comment is listed in the body with
// its marker even under the inline cap, never placed inline.
func TestPlanAliasesAndBodyOnly(t *testing.T) {
	t.Parallel()
	old := finding.Fingerprint("legacy", "SC2086")
	cs := []publish.Comment{
		{Path: "run.sh", Line: 2, Body: "quote $1 (a)", ID: finding.Fingerprint("a"), Aliases: []string{old}},
		{Path: "run.sh", Line: 3, Body: "quote $1 (b)", ID: finding.Fingerprint("b"), Aliases: []string{old}},
		{Path: "run.sh", Line: 90, Body: "outside the hunks", ID: finding.Fingerprint("c"), BodyOnly: true},
	}
	p := publish.PlanReview(publish.PlanOptions{Comments: cs, Posted: map[string]bool{old: true}})
	if len(p.Skipped) != 1 || p.Skipped[0].Line != 2 {
		t.Errorf("skipped %+v, want only the first comment of the alias", p.Skipped)
	}
	if len(p.Inline) != 1 || p.Inline[0].Line != 3 {
		t.Errorf("inline %+v, want the second comment", p.Inline)
	}
	if len(p.Folded) != 1 || p.Folded[0].Line != 90 || !strings.Contains(p.Body, "`run.sh:90`: outside the hunks") ||
		!slices.Contains(publish.Markers(p.Body), finding.Fingerprint("c")) {
		t.Errorf("body-only comment not listed with its marker: folded %+v, body:\n%s", p.Folded, p.Body)
	}
	// Without the alias posted, both go inline.
	if p := publish.PlanReview(publish.PlanOptions{Comments: cs[:2]}); len(p.Inline) != 2 {
		t.Errorf("inline %d, want 2", len(p.Inline))
	}
}

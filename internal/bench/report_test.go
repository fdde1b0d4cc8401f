package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/testkit"
)

// The systems that could not be set up are listed by name, in one order.
func TestPrintTableSkippedSorted(t *testing.T) {
	r := Report{Skipped: map[string]string{"oci-warm": "no pool", "gvisor": "no runsc", "docker": "no engine", "pairs": "no cells"}}
	got := testkit.Same(t, func() string {
		var b bytes.Buffer
		r.PrintTable(&b)
		return b.String()
	})
	want := "skipped docker: no engine\nskipped gvisor: no runsc\nskipped oci-warm: no pool\nskipped pairs: no cells\n"
	if !strings.Contains(got, want) {
		t.Errorf("table:\n%s\nwant the lines\n%s", got, want)
	}
}

// The table ends with what was measured, never with goals, issue numbers or verdicts;
// a figure not measured is left out.
func TestPrintTableShowsResultsNotTargets(t *testing.T) {
	cells := []Cell{
		{System: SysOCICold, Job: "true", Concurrency: 1, Requests: 10, P50MS: 12.5, P99MS: 20, ThroughputRPS: 70},
		{System: SysBareCrun, Job: "true", Concurrency: 1, Requests: 10, P50MS: 10, P99MS: 15, ThroughputRPS: 90},
	}
	r := Report{Cells: cells, Targets: targets(cells, nil)}
	var b bytes.Buffer
	r.PrintTable(&b)
	out := b.String()
	for _, bad := range []string{"issue", "MET", "NOT MEASURED", "target"} {
		if strings.Contains(out, bad) {
			t.Errorf("the table says %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"oci cold p50 through the API, true, c=1", "12.50ms", "1.25×"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "warm p50") {
		t.Errorf("a figure not measured is shown:\n%s", out)
	}
}

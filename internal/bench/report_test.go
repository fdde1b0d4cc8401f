package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

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

// A cell's phases are the percentiles of the server's own timings over its successful
// runs, printed in a run's order; a failed run's timings do not count.
func TestPhasePercentiles(t *testing.T) {
	var samples []sample
	for i := range 100 {
		samples = append(samples, sample{d: time.Duration(10+i) * time.Millisecond,
			timings: map[string]int64{"queue": 0, "create": int64(i + 1), "job": 2, "total": int64(10 + i)}})
	}
	samples = append(samples, sample{d: time.Second, err: errors.New("refused"), timings: map[string]int64{"create": 100000}})
	var cell Cell
	fill(&cell, samples, time.Second)
	c := cell.Phases["create"]
	if c.N != 100 || c.P50MS != 50 || c.P95MS != 95 || c.P99MS != 99 {
		t.Errorf("create: %+v", c)
	}
	if cell.P95MS != 104 {
		t.Errorf("the cell's p95: %v", cell.P95MS)
	}
	cell.System, cell.Job, cell.Concurrency = SysOCICold, "true", 1
	var b bytes.Buffer
	(&Report{Cells: []Cell{cell}}).PrintTable(&b)
	out := b.String()
	if !strings.Contains(out, "Phases (the server's own") || !strings.Contains(out, "50.0 / 95.0 / 99.0") {
		t.Errorf("no phase table:\n%s", out)
	}
	table := out[strings.Index(out, "Phases ("):]
	table = table[strings.Index(table, "\n"):]
	if strings.Index(table, "admission") > strings.Index(table, "queue") || strings.Index(table, "queue") > strings.Index(table, "create") ||
		strings.Index(table, "create") > strings.Index(table, "result") || strings.Index(table, "result") > strings.Index(table, "total") {
		t.Errorf("phases out of order:\n%s", out)
	}
}

package bench

import "fmt"

// Target is one goal of issue 8, checked against the cells of the same run.
type Target struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Value       float64 `json:"value"`
	Limit       float64 `json:"limit"`
	Unit        string  `json:"unit"`
	// AtLeast says the value must be ≥ Limit (otherwise ≤).
	AtLeast bool `json:"at_least"`
	Met     bool `json:"met"`
	// Missing says a cell it needs was not measured.
	Missing bool `json:"missing"`
	// Basis says which cells the value comes from.
	Basis string `json:"basis"`
}

// Target limits of issue 8.
const (
	TargetWarmP50MS          = 15
	TargetOCIColdP50MS       = 30
	TargetOCIColdVsBare      = 1.3
	TargetOCIThroughputRPS   = 40
	TargetOCIVsDockerColdRPS = 10
)

func targets(cells []Cell, pairs []Pair) []Target {
	find := func(sys, job string, c int) *Cell {
		for i := range cells {
			if cells[i].System == sys && cells[i].Job == job && cells[i].Concurrency == c && cells[i].Requests > cells[i].Errors {
				return &cells[i]
			}
		}
		return nil
	}
	best := func(sys, job string) *Cell {
		var b *Cell
		for i := range cells {
			c := &cells[i]
			if c.System == sys && c.Job == job && c.Requests > c.Errors && (b == nil || c.ThroughputRPS > b.ThroughputRPS) {
				b = c
			}
		}
		return b
	}
	check := func(t Target) Target {
		if !t.Missing {
			if t.AtLeast {
				t.Met = t.Value >= t.Limit
			} else {
				t.Met = t.Value <= t.Limit
			}
		}
		return t
	}
	var out []Target
	for _, sys := range []string{SysDockerWarm, SysOCIWarm} {
		t := Target{Name: "warm_p50_" + sys, Description: "warm p50 through the API, " + sys + ", true, c=1", Limit: TargetWarmP50MS, Unit: "ms",
			Basis: "paced rounds: a warm sandbox is ready for every request"}
		if c := find(sys, "true", 1); c != nil && c.PacedP50MS != nil {
			t.Value = *c.PacedP50MS
		} else {
			t.Missing = true
		}
		out = append(out, check(t))
	}
	cold, bare := find(SysOCICold, "true", 1), find(SysBareCrun, "true", 1)
	t := Target{Name: "oci_cold_p50", Description: "oci cold p50 through the API, true, c=1", Limit: TargetOCIColdP50MS, Unit: "ms", Basis: "closed loop, 1 client"}
	if cold != nil {
		t.Value = cold.P50MS
	} else {
		t.Missing = true
	}
	out = append(out, check(t))
	t = Target{Name: "oci_cold_vs_bare", Description: "oci cold p50 / bare crun run p50, true, c=1", Limit: TargetOCIColdVsBare, Unit: "×"}
	var alternating *Pair
	for i := range pairs {
		if pairs[i].System == SysOCICold && pairs[i].Base == SysBareCrun && pairs[i].Ratio > 0 {
			alternating = &pairs[i]
		}
	}
	switch {
	case alternating != nil:
		t.Value = alternating.Ratio
		t.Basis = fmt.Sprintf("%d alternating pairs, same bundle; the c=1 cells give %s", alternating.N, cellRatio(cold, bare))
	case cold != nil && bare != nil && bare.P50MS > 0:
		t.Value = round2(cold.P50MS / bare.P50MS)
		t.Basis = "c=1 cells of the same run, same bundle"
	default:
		t.Missing = true
	}
	out = append(out, check(t))
	ociBest := best(SysOCICold, "true")
	if w := best(SysOCIWarm, "true"); w != nil && (ociBest == nil || w.ThroughputRPS > ociBest.ThroughputRPS) {
		ociBest = w
	}
	t = Target{Name: "oci_throughput", Description: "oci sustained trivial runs per second", Limit: TargetOCIThroughputRPS, Unit: "/s", AtLeast: true}
	if ociBest != nil {
		t.Value = ociBest.ThroughputRPS
		t.Basis = fmt.Sprintf("best cell: %s c=%d", ociBest.System, ociBest.Concurrency)
	} else {
		t.Missing = true
	}
	out = append(out, check(t))
	dockerBest := best(SysDockerCold, "true")
	t = Target{Name: "oci_vs_docker_cold", Description: "oci throughput / Aster docker cold throughput, true", Limit: TargetOCIVsDockerColdRPS, Unit: "×", AtLeast: true}
	if ociBest != nil && dockerBest != nil && dockerBest.ThroughputRPS > 0 {
		t.Value = round2(ociBest.ThroughputRPS / dockerBest.ThroughputRPS)
		t.Basis = fmt.Sprintf("best cells: %s c=%d vs %s c=%d", ociBest.System, ociBest.Concurrency, dockerBest.System, dockerBest.Concurrency)
	} else {
		t.Missing = true
	}
	out = append(out, check(t))
	return out
}

func cellRatio(a, b *Cell) string {
	if a == nil || b == nil || b.P50MS == 0 {
		return "no ratio"
	}
	return fmt.Sprintf("%.2f×", a.P50MS/b.P50MS)
}

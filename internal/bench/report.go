package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one harness run, as printed and as written to JSON.
type Report struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Machine  Machine   `json:"machine"`
	Image    string    `json:"image"`
	Settings Settings  `json:"settings"`
	Cells    []Cell    `json:"cells"`
	// Pairs are alternating comparisons (oci cold against bare crun).
	Pairs   []Pair   `json:"pairs,omitempty"`
	Targets []Target `json:"targets"`
	// Skipped names systems that could not be set up, with why.
	Skipped map[string]string `json:"skipped,omitempty"`
}

// Settings are the knobs of the run, for reading the numbers.
type Settings struct {
	Systems     []string `json:"systems"`
	Jobs        []Job    `json:"jobs"`
	Concurrency []int    `json:"concurrency"`
	DurationMS  int64    `json:"duration_ms"`
	MinRequests int      `json:"min_requests"`
	PacedRounds int      `json:"paced_rounds"`
	Warm        int      `json:"warm"`
	OCIRuntime  string   `json:"oci_runtime,omitempty"`
}

// Machine describes where the numbers come from.
type Machine struct {
	Cores      int       `json:"cores"`
	CPUModel   string    `json:"cpu_model"`
	Kernel     string    `json:"kernel"`
	GoVersion  string    `json:"go_version"`
	LoadBefore []float64 `json:"loadavg_before"`
	LoadAfter  []float64 `json:"loadavg_after"`
	Runtimes   []string  `json:"runtime_versions"`
}

// Run measures every configured system and returns the report. Systems that
// cannot be set up are skipped and named in the report.
func Run(ctx context.Context, cfg Config, env Env) (*Report, error) {
	if len(cfg.Systems) == 0 {
		cfg.Systems = SystemNames
	}
	if len(cfg.Jobs) == 0 {
		cfg.Jobs = DefaultJobs()
	}
	if len(cfg.Concurrency) == 0 {
		cfg.Concurrency = []int{1, 2, 16}
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.MinRequests <= 0 {
		cfg.MinRequests = 5
	}
	if cfg.PacedRounds <= 0 {
		cfg.PacedRounds = 10
	}
	if cfg.Warm <= 0 {
		cfg.Warm = slices.Max(cfg.Concurrency)
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	rep := &Report{
		Started: time.Now(), Image: env.Image, Skipped: map[string]string{},
		Settings: Settings{Systems: cfg.Systems, Jobs: cfg.Jobs, Concurrency: cfg.Concurrency, DurationMS: cfg.Duration.Milliseconds(),
			MinRequests: cfg.MinRequests, PacedRounds: cfg.PacedRounds, Warm: cfg.Warm},
		Machine: machine(ctx, env),
	}
	if env.OCI != nil {
		rep.Settings.OCIRuntime = env.OCI.Binary()
	}
	for _, name := range cfg.Systems {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(progress, "== %s: setting up\n", name)
		sys, err := newSystem(ctx, name, env, cfg.Warm)
		if err != nil {
			rep.Skipped[name] = err.Error()
			fmt.Fprintf(progress, "   skipped: %v\n", err)
			continue
		}
		for _, job := range cfg.Jobs {
			for _, c := range cfg.Concurrency {
				if q, ok := sys.(interface{ quiesce(context.Context) }); ok {
					q.quiesce(ctx)
				}
				cell := measure(ctx, sys, job, c, cfg)
				rep.Cells = append(rep.Cells, cell)
				fmt.Fprintf(progress, "   %-7s c=%-3d n=%-4d err=%-3d p50=%8.2fms p99=%8.2fms %7.2f/s%s\n",
					job.Name, c, cell.Requests, cell.Errors, cell.P50MS, cell.P99MS, cell.ThroughputRPS, pacedNote(cell))
			}
		}
		if err := sys.Close(); err != nil {
			fmt.Fprintf(progress, "   close: %v\n", err)
		}
	}
	if cfg.Pairs > 0 && slices.Contains(cfg.Systems, SysBareCrun) && slices.Contains(cfg.Systems, SysOCICold) && ctx.Err() == nil {
		fmt.Fprintf(progress, "== %s against %s, alternating\n", SysOCICold, SysBareCrun)
		if p, err := runPair(ctx, env, cfg); err != nil {
			rep.Skipped["pairs"] = err.Error()
		} else {
			rep.Pairs = append(rep.Pairs, p)
			fmt.Fprintf(progress, "   %s\n", p)
		}
	}
	rep.Machine.LoadAfter = loadavg()
	rep.Finished = time.Now()
	rep.Targets = targets(rep.Cells, rep.Pairs)
	return rep, ctx.Err()
}

func pacedNote(c Cell) string {
	if c.PacedP50MS == nil {
		return ""
	}
	return fmt.Sprintf("  warm-hit=%.0f%%  paced p50=%.2fms p99=%.2fms (hit %.0f%%)", *c.WarmHitRate*100, *c.PacedP50MS, *c.PacedP99MS, *c.PacedHitRate*100)
}

// PrintTable writes the cells as a table, then the targets.
func (r *Report) PrintTable(w io.Writer) {
	fmt.Fprintf(w, "Aster benchmark — %d cores, %s, kernel %s, load %v → %v\n", r.Machine.Cores, r.Machine.CPUModel, r.Machine.Kernel, r.Machine.LoadBefore, r.Machine.LoadAfter)
	fmt.Fprintf(w, "closed loop of %s per cell (at least %d requests); warm rows add %d paced rounds with a full pool of %d\n\n",
		time.Duration(r.Settings.DurationMS)*time.Millisecond, r.Settings.MinRequests, r.Settings.PacedRounds, r.Settings.Warm)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tjob\tconc\tn\terrors\tp50 ms\tp95 ms\tp99 ms\truns/s\twarm hit\tpaced p50 ms\tpaced p99 ms\t")
	for _, c := range r.Cells {
		hit, pp50, pp99 := "-", "-", "-"
		if c.WarmHitRate != nil {
			hit = fmt.Sprintf("%.0f%%", *c.WarmHitRate*100)
		}
		if c.PacedP50MS != nil {
			pp50, pp99 = fmt.Sprintf("%.2f", *c.PacedP50MS), fmt.Sprintf("%.2f", *c.PacedP99MS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t\n",
			c.System, c.Job, c.Concurrency, c.Requests, c.Errors, c.P50MS, c.P95MS, c.P99MS, c.ThroughputRPS, hit, pp50, pp99)
	}
	tw.Flush()
	r.printPhases(w)
	for _, p := range r.Pairs {
		fmt.Fprintf(w, "\n%s\n", p)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Skipped)) {
		fmt.Fprintf(w, "skipped %s: %s\n", name, r.Skipped[name])
	}
	// The headline figures this run measured; the goals they are held to live in the
	// JSON report (targets) and docs/performance.md, not in what a user reads here.
	var measured []Target
	for _, t := range r.Targets {
		if !t.Missing {
			measured = append(measured, t)
		}
	}
	if len(measured) == 0 {
		return
	}
	fmt.Fprintln(w, "\nIn short:")
	for _, t := range measured {
		basis := ""
		if t.Basis != "" {
			basis = " (" + t.Basis + ")"
		}
		fmt.Fprintf(w, "  %-58s %.2f%s%s\n", t.Description, t.Value, t.Unit, basis)
	}
}

func machine(ctx context.Context, env Env) Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadavg()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	version := func(bin string, args ...string) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, args...).Output()
		if err == nil {
			line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			m.Runtimes = append(m.Runtimes, line)
		}
	}
	if env.OCI != nil {
		version(env.OCI.Binary(), "--version")
	}
	if env.GVisor != nil {
		if info, ok := env.GVisor.GVisor(); ok {
			m.Runtimes = append(m.Runtimes, info.Version+" (platform "+info.Platform+")")
		}
	}
	if env.DockerCLI != "" {
		version(env.DockerCLI, "version", "--format", "docker engine {{.Server.Version}}")
	}
	return m
}

func loadavg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	var a, b5, c float64
	if _, err := fmt.Sscanf(string(b), "%f %f %f", &a, &b5, &c); err != nil {
		return nil
	}
	return []float64{a, b5, c}
}

func numCPU() int { return runtime.NumCPU() }

func runPair(ctx context.Context, env Env, cfg Config) (Pair, error) {
	a, err := newSystem(ctx, SysOCICold, env, 0)
	if err != nil {
		return Pair{}, err
	}
	defer a.Close()
	b, err := newSystem(ctx, SysBareCrun, env, 0)
	if err != nil {
		return Pair{}, err
	}
	defer b.Close()
	return pair(ctx, a, b, cfg.Jobs[0], cfg.Pairs), nil
}

// phaseOrder is the order phases are printed in: a run's life, then its total.
var phaseOrder = []string{"admission", "queue", "prepare", "create", "start", "init", "job", "result", "remove", "total"}

// printPhases writes, for every cell whose system reports the server's timings, each
// phase's p50/p95/p99 in milliseconds: where a slow start went.
func (r *Report) printPhases(w io.Writer) {
	var cells []Cell
	for _, c := range r.Cells {
		if len(c.Phases) > 0 {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return
	}
	fmt.Fprintln(w, "\nPhases (the server's own, ms: p50 / p95 / p99; prepare = create + start + init; remove runs after the answer):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "system\tjob\tconc\t")
	for _, p := range phaseOrder {
		fmt.Fprintf(tw, "%s\t", p)
	}
	fmt.Fprintln(tw)
	for _, c := range cells {
		fmt.Fprintf(tw, "%s\t%s\t%d\t", c.System, c.Job, c.Concurrency)
		for _, p := range phaseOrder {
			if s, ok := c.Phases[p]; ok {
				fmt.Fprintf(tw, "%.1f / %.1f / %.1f\t", s.P50MS, s.P95MS, s.P99MS)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/bench"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/docker"
	"github.com/asterhq/aster/internal/sandbox/oci"
)

var _ = func() bool { extraCommands = append(extraCommands, newBenchCmd); return true }()

type benchFlags struct {
	systems, concurrency, jobs, out string
	duration                        time.Duration
	minRequests, pacedRounds, warm  int
	pairs                           int
}

func newBenchCmd(g *globals) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Measure sandbox latency and throughput: bare crun and runsc, docker run, Aster docker, oci and gvisor, cold and warm",
		Long: `Measure, in one run, the same jobs on every way this machine can run them:

  bare-crun          the oci runtime binary alone on the very bundle an Aster
                     oci sandbox gets (job as PID 1, no aster-init, no API)
  docker-run         docker run --rm --network none IMAGE JOB
  aster-docker-cold  Aster over Docker, a fresh sandbox per request
  aster-docker-cold-newconn  the same through a client that opens a new
                     connection for every request (curl, a one-off script)
  aster-docker-warm  Aster over Docker with a warm pool
  aster-oci-cold     Aster driving the oci runtime directly, a fresh sandbox per request
  aster-oci-cold-newconn  the same, a new connection for every request
  aster-oci-warm     the same with a warm pool
  bare-runsc         gVisor's runsc alone on the same bundle (--runsc, --gvisor-platform)
  aster-gvisor-cold  Aster with --runtime gvisor, a fresh sandbox per request
  aster-gvisor-warm  the same with a warm pool
  aster-microvm-cold Aster on one QEMU microVM per request (not in the default
                     set: under TCG a boot takes seconds; name it in --systems)
  aster-microvm-warm the same with a warm pool of booted VMs

Aster is measured through its HTTP API (a real server on a loopback port and a
real HTTP client that keeps connections alive, or with -newconn opens one per
request), with sandboxes destroyed in the background after the result,
as 'aster sandbox serve' does. Each system runs each job (true, and python3
printing a line) as a closed loop of 1, 2 and 16 clients for --duration; warm
systems also get paced rounds that wait for a full pool first, which is the
latency a request sees when a warm sandbox is ready. Prints a table; for every
Aster row the p50/p95/p99 of each phase the server observed (admission, queue,
prepare = create + start + init, job, result, remove, total: the same
observations as aster_sandbox_phase_seconds in /metrics); and the headline
figures. Writes everything, with the machine's core count and load, to --out
as JSON.

Needs root for the oci, gvisor and microvm rows (and runsc for the gvisor
ones) and a Docker engine for the docker rows and the first export of the
image; a system
that cannot be set up is skipped and said so. Numbers on a shared machine are
noisy: the load average before and after is in the report.

'aster bench sleepers' is the concurrency test.`,
		Example: `  sudo aster bench
  sudo aster bench --systems bare-crun,aster-oci-cold,aster-oci-warm --duration 10s
  sudo aster bench --oci-runtime runc --systems bare-crun,aster-oci-cold
  sudo aster bench --systems bare-crun,aster-oci-cold,aster-oci-warm,bare-runsc,aster-gvisor-cold,aster-gvisor-warm --pairs 0
  sudo aster bench --systems bare-crun,aster-oci-cold,aster-microvm-cold,aster-microvm-warm --concurrency 1 --warm 2 --pairs 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.systems, "systems", strings.Join(bench.DefaultSystems, ","), "systems to measure, comma-separated (also: "+bench.SysMicroVMCold+", "+bench.SysMicroVMWarm+")")
	fl.StringVar(&f.jobs, "jobs", "true,python", "jobs to run: true, python")
	fl.StringVar(&f.concurrency, "concurrency", "1,2,16", "client counts, comma-separated")
	fl.DurationVar(&f.duration, "duration", 5*time.Second, "closed-loop time per cell")
	fl.IntVar(&f.minRequests, "min-requests", 5, "requests per cell at least, however long they take")
	fl.IntVar(&f.pacedRounds, "paced-rounds", 10, "warm-latency rounds per warm cell")
	fl.IntVar(&f.warm, "warm", 0, "pool size of the warm systems (default: the largest concurrency)")
	fl.IntVar(&f.pairs, "pairs", 100, "alternating aster-oci-cold/bare-crun runs for the ratio target (0: use the c=1 cells)")
	fl.StringVar(&f.out, "out", "bench-results.json", "where to write the JSON report (empty: nowhere)")
	cmd.AddCommand(newBenchSleepersCmd(g), newBenchReviewCmd(g), newBenchAppCmd(g))
	return cmd
}

func runBench(cmd *cobra.Command, g *globals, f *benchFlags) error {
	c, err := g.load(cmd)
	if err != nil {
		return err
	}
	cfg := bench.Config{Duration: f.duration, MinRequests: f.minRequests, PacedRounds: f.pacedRounds, Warm: f.warm, Pairs: f.pairs, Progress: g.stdio.Stderr}
	cfg.Systems = config.SplitList(f.systems)
	for _, s := range cfg.Systems {
		if !contains(bench.SystemNames, s) {
			return usageErr("--systems: unknown system %q (have %s)", s, strings.Join(bench.SystemNames, ", "))
		}
	}
	jobs := map[string]bench.Job{}
	for _, j := range bench.DefaultJobs() {
		jobs[j.Name] = j
	}
	for _, name := range config.SplitList(f.jobs) {
		j, ok := jobs[name]
		if !ok {
			return usageErr("--jobs: unknown job %q (have true, python)", name)
		}
		cfg.Jobs = append(cfg.Jobs, j)
	}
	for _, s := range config.SplitList(f.concurrency) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 256 {
			return usageErr("--concurrency: %q is not a number from 1 to 256", s)
		}
		cfg.Concurrency = append(cfg.Concurrency, n)
	}
	defaults, err := c.Limits.Parse()
	if err != nil {
		return usageErr("limits: %v", err)
	}
	if !cmd.Flags().Changed("log-level") {
		c.LogLevel = "warn" // the API's per-request lines would drown the table
	}
	log := g.logger(c)
	env := bench.Env{Image: c.Images[0], Defaults: defaults, Config: c, Labels: map[string]string{"aster.bench": "1"}, Logger: log}
	ctx := cmd.Context()
	needs := func(names ...string) bool {
		for _, n := range names {
			if contains(cfg.Systems, n) {
				return true
			}
		}
		return false
	}
	// Each runtime a system asked for is opened as the commands open it (the
	// docker rows with the bench's labels only), checked and given the image;
	// one that cannot be is said, and its systems are skipped.
	runtimes := []struct {
		name    string
		systems []string
		open    func(config.Config, *slog.Logger) (sandbox.Runtime, func(), error)
		set     func(sandbox.Runtime)
	}{
		{"docker", []string{bench.SysDockerCold, bench.SysDockerWarm}, func(c config.Config, log *slog.Logger) (sandbox.Runtime, func(), error) {
			c.Labels = env.Labels
			return newDockerRuntime(c, log)
		}, func(rt sandbox.Runtime) { env.Docker = rt.(*docker.Runtime) }},
		{"oci", []string{bench.SysBareCrun, bench.SysOCICold, bench.SysOCIWarm}, newOCIRuntime, func(rt sandbox.Runtime) { env.OCI = rt.(*oci.Runtime) }},
		{"gvisor", []string{bench.SysBareRunsc, bench.SysGVisorCold, bench.SysGVisorWarm}, newGVisorRuntime, func(rt sandbox.Runtime) { env.GVisor = rt.(*oci.Runtime) }},
		{"microvm", []string{bench.SysMicroVMCold, bench.SysMicroVMWarm}, newMicroVMRuntime, func(rt sandbox.Runtime) { env.MicroVM = rt }},
	}
	_, initErr := c.ResolveInitPath()
	for _, r := range runtimes {
		if initErr != nil || !needs(r.systems...) {
			continue
		}
		rt, closeRT, err := r.open(c, log)
		if err == nil {
			defer closeRT()
			err = benchReady(ctx, rt, env.Image)
		}
		if err != nil {
			fmt.Fprintf(g.stdio.Stderr, "aster bench: %s runtime unavailable: %v\n", r.name, err)
			continue
		}
		r.set(rt)
	}
	if needs(bench.SysDockerRun) {
		if p, err := exec.LookPath("docker"); err == nil {
			env.DockerCLI = p
		}
	}
	if initErr != nil {
		fmt.Fprintf(g.stdio.Stderr, "aster bench: %v\n", initErr)
	}
	rep, err := bench.Run(ctx, cfg, env)
	if rep != nil {
		rep.PrintTable(g.stdio.Stdout)
		if err := saveReport(f.out, rep, g.stdio.Stdout, "\nwrote %s\n"); err != nil {
			return err
		}
	}
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	return nil
}

// benchReady checks rt and, where the runtime keeps its own image cache (oci,
// gvisor, microvm), fills it with image before any clock starts.
func benchReady(ctx context.Context, rt sandbox.Runtime, image string) error {
	if err := rt.Check(ctx); err != nil {
		return err
	}
	if e, ok := rt.(interface {
		EnsureImage(context.Context, string) error
	}); ok {
		return e.EnsureImage(ctx, image)
	}
	return nil
}

func newBenchSleepersCmd(g *globals) *cobra.Command {
	var (
		n, pids           int
		sessions          bool
		hold, startWindow time.Duration
		out               string
	)
	cmd := &cobra.Command{
		Use:   "sleepers [flags]",
		Short: "Hold hundreds of sleeping sandboxes at once through a real server and report its memory",
		Long: `Start 'aster sandbox serve' with --max-concurrent N, send it N requests at
once, each a sandbox that sleeps, and check that all N are alive together for
--hold with zero errors, while sampling the server process's resident memory.
While all are up it also adds up what the sandboxes cost outside the server
(oci, gvisor: the runtime's and the sandboxes' processes; microvm: each VM's
QEMU; docker: the engine's and the containers'), as RSS and as PSS (shared pages shared out), in all and per
sandbox: the density figure.

With --sessions each of the N is an idle session instead (POST /v1/sessions,
held until the end, then DELETE): its sandbox holds only aster-init -hold, so
the figures are the memory per idle session.

Every sleeper sleeps until launch + --start-window + --hold: all N overlap for
--hold as long as the runtime starts them all within --start-window. Docker
starts a few containers per second, so give it a longer window (e.g. 240s for
500); the oci runtime needs a few seconds.

The server is this binary, with the global flags given here (--runtime,
--oci-runtime, --init-path, --config).`,
		Example: `  sudo aster bench sleepers --runtime oci
  sudo aster bench sleepers --runtime oci --n 1000 --pids 16 --hold 10s --out sleepers.json
  sudo aster bench sleepers --runtime gvisor --n 50 --pids 16 --hold 10s
  sudo aster bench sleepers --runtime docker --start-window 240s
  sudo aster bench sleepers --runtime oci --sessions --n 100 --pids 16 --hold 10s
  sudo aster bench sleepers --runtime microvm --sessions --n 10 --pids 16 --hold 10s --start-window 120s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.load(cmd)
			if err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			var pass []string
			for _, name := range []string{"config", "init-path", "oci-runtime", "runsc", "gvisor-platform", "docker-host", "engine-runtime"} {
				if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
					pass = append(pass, "--"+name, fl.Value.String())
				}
			}
			rep, err := bench.Sleepers(cmd.Context(), bench.SleepersConfig{
				Runtime: c.Runtime, N: n, Hold: hold, StartWindow: startWindow, Pids: pids,
				Aster: self, ServeArgs: pass, Progress: g.stdio.Stderr, Sessions: sessions,
			})
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			bench.PrintSleepers(g.stdio.Stdout, rep)
			if err := saveReport(out, rep, g.stdio.Stdout, "wrote %s\n"); err != nil {
				return err
			}
			if !rep.Pass {
				return &exitError{code: ExitFailure}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&n, "n", 500, "sandboxes to hold at once (the server's --max-concurrent)")
	fl.BoolVar(&sessions, "sessions", false, "hold N idle sessions (POST /v1/sessions, deleted at the end) instead of N sleeping runs: the memory per idle session")
	fl.DurationVar(&hold, "hold", 30*time.Second, "how long all of them must be alive together")
	fl.DurationVar(&startWindow, "start-window", 60*time.Second, "time the runtime gets to start all of them")
	fl.IntVar(&pids, "pids", 0, "each sleeper's pids limit (0: the server's default); the host task budget charges oci and gvisor sandboxes by it, so holding many at once needs a small one")
	fl.StringVar(&out, "out", "", "write the report as JSON here")
	return cmd
}

// saveReport writes rep as JSON to path, unless path is empty, and says so on
// w in format (of the path); a failed write exits 1.
func saveReport(path string, rep any, w io.Writer, format string) error {
	if path == "" {
		return nil
	}
	if err := writeJSON(path, rep); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	fmt.Fprintf(w, format, path)
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

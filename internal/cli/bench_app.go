package cli

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/bench"
	"github.com/asterhq/aster/internal/config"
)

type benchAppFlags struct {
	prs, bundles, stores, postgres, out, logs string
	files, workers                            int
	timeout                                   time.Duration
	json                                      bool
}

func newBenchAppCmd(g *globals) *cobra.Command {
	f := &benchAppFlags{}
	cmd := &cobra.Command{
		Use:   "app [flags] [-- app serve flags]",
		Short: "Load 'aster app serve' with N pull requests at once against a fake GitHub: webhook-to-review latency, reviews a minute, memory, sandboxes",
		Long: `Start 'aster app serve' (this binary, as a child process) against a fake
GitHub on a loopback port, deliver N signed pull_request "opened" webhooks at
once, and wait until every pull request's check run is completed: the last
thing the App does for a review. One cell per N of --prs and per store of
--stores (every store for one N before the next N), each on a fresh server
(and a fresh SQLite file), so nothing is warm from the cell before.

The fake GitHub is the one the App's tests use: it accepts only requests that
are operations of GitHub's published OpenAPI description with valid bodies,
and serves pull requests, diffs and tarballs from a real git repository. A
request it refuses fails the cell. It needs the octokit test data of the
checkout (scripts/fetch-test-deps.sh): run the bench from the repository, or
set ASTER_OCTOKIT_DIR.

The pull requests are real code: each --bundles git bundle gives its first
commit's tree as the repository's base (every bundle under its NAME/) and the
Python, JavaScript, TypeScript and Go files its tip modified as the pool of
changes; pull request i changes --files of them (consecutive in the pool,
wrapping around) to their tip content. The repository has no .aster.yml: the
App reviews with its defaults, the gate only (no model is configured for the
child unless your configuration names one). Any git bundle with two commits or
more will do; scripts/noise-bundle.sh GITDIR N OUT.bundle makes a small one of
the last N commits of a clone (the ../noise bundles of the examples were made
so).

Reports per cell: the time from a pull request's delivery to its completed
check run (p50, p95, p99, max; polled every 100 ms), reviews a minute (the
reviews over the time from the first delivery to the last review), the
server's resident memory when idle and its peak (VmHWM of the app serve
process alone: containers and runtime processes are not in it), and the most
sandboxes alive at once (aster_sandbox_running in the server's /metrics,
sampled every 100 ms) against its slots (--workers x --parallel). The App
reviews --workers pull requests at once; the rest wait in its queue.

Progress lines go to stderr. Arguments after -- go to 'aster app serve'
(e.g. -- --parallel 2 --job-timeout 30m); --runtime, --init-path,
--oci-runtime, --docker-host and --config given here are passed too.`,
		Example: `  aster bench app --bundles ../shared/corpus/flask.bundle,../noise/express.bundle,../noise/cobra.bundle
  aster bench app --bundles flask.bundle,cobra.bundle --prs 10,50,100 --postgres "$(scripts/postgres-test.sh)" --stores sqlite,postgres
  aster bench app --bundles flask.bundle --prs 50 --workers 8 --json --out app-bench.json
  aster bench app --bundles flask.bundle --prs 10 --runtime oci -- --parallel 2`,
		RunE: func(cmd *cobra.Command, args []string) error { return runBenchApp(cmd, g, f, args) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.prs, "prs", "10,50,100", "pull requests delivered at once, comma-separated: one cell each")
	fl.IntVar(&f.files, "files", 20, "files each pull request changes")
	fl.StringVar(&f.bundles, "bundles", "", "git bundles the changes come from, comma-separated (required; each needs two commits or more)")
	fl.StringVar(&f.stores, "stores", "", "sqlite, postgres, or both comma-separated (default sqlite, and postgres when --postgres is set)")
	fl.StringVar(&f.postgres, "postgres", "", "postgres://... for the postgres cells (each cell's repository is new to it; scripts/postgres-test.sh starts a throwaway server)")
	fl.IntVar(&f.workers, "workers", 0, "app serve's --workers: pull requests reviewed at once (0: its default, "+strconv.Itoa(config.DefaultAppWorkers)+")")
	fl.DurationVar(&f.timeout, "timeout", 20*time.Minute, "longest one cell may take, from the first delivery to the last review")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON instead of the table")
	fl.StringVar(&f.out, "out", "", "also write the JSON report here (after every cell, so a stopped run keeps its cells)")
	fl.StringVar(&f.logs, "logs", "", "keep each cell's app serve log and the full text of its check runs that did not end success in this directory")
	return cmd
}

func runBenchApp(cmd *cobra.Command, g *globals, f *benchAppFlags, args []string) error {
	if dash := cmd.ArgsLenAtDash(); (dash < 0 && len(args) > 0) || dash > 0 {
		return usageErr("unexpected argument %q: arguments for app serve go after --", args[0])
	}
	cfg := bench.AppConfig{FilesPerPR: f.files, Workers: f.workers, Timeout: f.timeout, Progress: g.stdio.Stderr, LogDir: f.logs}
	for _, s := range config.SplitList(f.prs) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return usageErr("--prs: %q is not a number from 1 to 1000", s)
		}
		cfg.PRs = append(cfg.PRs, n)
	}
	if len(cfg.PRs) == 0 {
		return usageErr("--prs: name at least one count, e.g. --prs 10,50")
	}
	if f.files < 1 || f.files > 1000 {
		return usageErr("--files %d: want 1 to 1000", f.files)
	}
	if f.workers < 0 {
		return usageErr("--workers %d: want 1 or more (0: app serve's default)", f.workers)
	}
	cfg.Bundles = config.SplitList(f.bundles)
	if len(cfg.Bundles) == 0 {
		return usageErr("--bundles: name the git bundles the pull requests' code comes from, e.g. --bundles ../shared/corpus/flask.bundle,../noise/cobra.bundle")
	}
	for _, b := range cfg.Bundles {
		if st, err := os.Stat(b); err != nil || st.IsDir() {
			return usageErr("--bundles: %s is not a file", b)
		}
	}
	stores := config.SplitList(f.stores)
	if len(stores) == 0 {
		stores = []string{"sqlite"}
		if f.postgres != "" {
			stores = append(stores, "postgres")
		}
	}
	for _, s := range stores {
		switch s {
		case "sqlite":
			cfg.Stores = append(cfg.Stores, bench.AppStore{Name: s})
		case "postgres":
			if f.postgres == "" {
				return usageErr("--stores postgres needs --postgres URL (scripts/postgres-test.sh starts a throwaway server)")
			}
			cfg.Stores = append(cfg.Stores, bench.AppStore{Name: s, URL: f.postgres})
		default:
			return usageErr("--stores: unknown store %q (have sqlite, postgres)", s)
		}
	}
	if _, err := g.load(cmd); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	cfg.Binary = self
	for _, name := range []string{"config", "runtime", "init-path", "oci-runtime", "runsc", "gvisor-platform", "docker-host", "engine-runtime"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			cfg.ServeArgs = append(cfg.ServeArgs, "--"+name, fl.Value.String())
		}
	}
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		cfg.ServeArgs = append(cfg.ServeArgs, args[dash:]...)
	}
	if f.out != "" {
		cfg.Checkpoint = func(rep *bench.AppReport) {
			if err := writeJSON(f.out, rep); err != nil {
				fmt.Fprintf(g.stdio.Stderr, "aster bench app: %v\n", err)
			}
		}
	}
	rep, err := bench.RunApp(cmd.Context(), cfg)
	if rep != nil {
		if f.json {
			if werr := writeJSONTo(g.stdio.Stdout, rep); werr != nil {
				return &exitError{code: ExitFailure, err: werr}
			}
		} else {
			bench.PrintApp(g.stdio.Stdout, rep)
		}
		if err := saveReport(f.out, rep, g.stdio.Stderr, "aster bench app: wrote %s\n"); err != nil {
			return err
		}
	}
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	for _, c := range rep.Cells {
		if c.Error != "" {
			return &exitError{code: ExitFailure, err: fmt.Errorf("%s, %d pull requests: %s", c.Store, c.PRs, c.Error)}
		}
	}
	return nil
}

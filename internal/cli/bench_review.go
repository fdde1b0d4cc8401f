package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/bench"
	"github.com/asterhq/aster/internal/config"
)

type benchReviewFlags struct {
	corpus, repos, expected, out, suites string
	json, markdown                       bool
	parallel, last                       int
}

// defaultCorpus is where the workplace keeps the corpus: shared/corpus next
// to the repository's checkout.
const defaultCorpus = "../shared/corpus"

func newBenchReviewCmd(g *globals) *cobra.Command {
	f := &benchReviewFlags{}
	cmd := &cobra.Command{
		Use:   "review [flags]",
		Short: "Run the review gate over a corpus of real repositories (git bundles) and measure what it reports",
		Long: `Clone each NAME.bundle of --corpus into a temporary directory and run the
gate 'aster review' runs (same analyzers, same sandboxes, same image, the
repository's own .aster.yml from the base) on its change: a two-commit
bundle's second commit against its first; any other bundle's whole head tree,
as if added to an empty repository. Repositories run one at a time.

Prints one table: the change's files and lines, findings reported by
severity and by analyzer, suppressed and outside-diff counts, analyzers that
did not finish ok, and the wall time of the review. A repository with an
expected-findings list (--expected DIR/NAME.json; by default the lists kept
in the source tree, internal/bench/expected) also gets recall: expected
entries a reported finding starts on (no line tolerance), injections
(SQL, NoSQL, command, code) counted apart, the missed entries listed, and
reported findings on no expected entry ("unexpected").

With --last N, each bundle (which needs that much history) is reviewed as
its last N commits pushed at once: the tip against its Nth first-parent
ancestor. Run over well-kept repositories this is the noise suite: every
error and warning reported there is one too many, and the table ends with
their total.

Without --corpus, ` + defaultCorpus + ` from the repository's top directory (or
the current directory) is used when it exists; when it does not, the
benchmark says so and exits 0.

With --suites DIR, it runs the labelled suites instead: public vulnerable
code kept as DIR/NAME.bundle, labelled in the source tree
(internal/bench/suites/NAME.json) with every sink site considered, vulnerable
or not. Each suite's whole tree is reviewed, and each category is scored as
OWASP's benchmarks do (true-positive rate minus false-positive rate) for the
whole gate, the gate without the taint engine, Bandit alone and the Python
taint engine alone; the table also gives the taint engine's files, time and
peak memory, and the vulnerable sites Bandit found that it missed.`,
		Example: `  aster bench review
  aster bench review --corpus ../shared/corpus --repo dvpwa,nodegoat --markdown
  aster bench review --json --out review-bench.json
  aster bench review --corpus ../noise --last 30 --markdown
  aster bench review --suites ../suites --markdown`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchReview(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.corpus, "corpus", "", "directory of NAME.bundle files (default "+defaultCorpus+" when it exists)")
	fl.StringVar(&f.repos, "repo", "", "repositories to review, comma-separated NAMEs (default: every bundle)")
	fl.StringVar(&f.expected, "expected", "", "directory of NAME.json expected-findings lists (default: the lists built in)")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON instead of the table")
	fl.BoolVar(&f.markdown, "markdown", false, "print the table as Markdown")
	fl.StringVar(&f.out, "out", "", "also write the JSON report here")
	fl.IntVar(&f.last, "last", 0, "review each bundle's last N commits (tip against its Nth first-parent ancestor) instead of its usual change")
	fl.StringVar(&f.suites, "suites", "", "directory of the labelled suites' NAME.bundle files: score them instead of the corpus")
	parallelVar(fl, &f.parallel, "analyzers run at once (as aster review --parallel)")
	return cmd
}

func runBenchReview(cmd *cobra.Command, g *globals, f *benchReviewFlags) error {
	if f.json && f.markdown {
		return usageErr("--json and --markdown: pick one")
	}
	if err := checkParallel(f.parallel); err != nil {
		return err
	}
	if f.last < 0 || f.last > bench.MaxLast {
		return usageErr("--last %d: want 1 to %d commits", f.last, bench.MaxLast)
	}
	if f.suites != "" {
		if f.last != 0 {
			return usageErr("--last is for the corpus run, not --suites")
		}
		return runBenchSuites(cmd, g, f)
	}
	corpus := f.corpus
	if corpus == "" {
		corpus = findCorpus(cmd)
		if corpus == "" {
			fmt.Fprintf(g.stdio.Stderr, "aster bench review: skipped: no corpus at %s (pass --corpus DIR)\n", defaultCorpus)
			return nil
		}
	}
	have, err := bench.CorpusRepos(corpus)
	if err != nil {
		return usageErr("--corpus: %v", err)
	}
	if len(have) == 0 {
		return usageErr("--corpus %s: no *%s files", corpus, bench.BundleSuffix)
	}
	cfg := bench.ReviewConfig{Corpus: corpus, Repos: config.SplitList(f.repos), Progress: g.stdio.Stderr, Last: f.last}
	for _, n := range cfg.Repos {
		if !contains(have, n) {
			return usageErr("--repo: no %s%s in %s (have %s)", n, bench.BundleSuffix, corpus, strings.Join(have, ", "))
		}
	}
	if f.expected != "" {
		st, err := os.Stat(f.expected)
		if err != nil || !st.IsDir() {
			return usageErr("--expected %s: not a directory", f.expected)
		}
		cfg.Expected = os.DirFS(f.expected)
	}
	// Check every list before the first sandbox starts.
	lists := cfg.Expected
	if lists == nil {
		lists = bench.ExpectedLists()
	}
	for _, n := range orAll(cfg.Repos, have) {
		if _, _, err := bench.LoadExpected(lists, n); err != nil {
			return usageErr("--expected: %v", err)
		}
	}
	c, err := g.load(cmd)
	if err != nil {
		return err
	}
	if !cmd.Flags().Changed("log-level") {
		c.LogLevel = "warn"
	}
	log := g.logger(c)
	ctx := cmd.Context()
	rg, err := openReviewGate(ctx, c, log, f.parallel, nil)
	if err != nil {
		return err
	}
	defer rg.close()
	cfg.Gate = rg.runner
	rep, err := bench.RunReview(ctx, cfg)
	if rep != nil {
		if f.json {
			if werr := writeJSONTo(g.stdio.Stdout, rep); werr != nil {
				return &exitError{code: ExitFailure, err: werr}
			}
		} else {
			bench.PrintReviewTable(g.stdio.Stdout, rep, f.markdown)
		}
		if err := saveReport(f.out, rep, g.stdio.Stderr, "aster bench review: wrote %s\n"); err != nil {
			return err
		}
	}
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	for _, r := range rep.Repos {
		if r.Error != "" {
			return &exitError{code: ExitFailure, err: fmt.Errorf("%s: %s", r.Name, r.Error)}
		}
	}
	return nil
}

func orAll(picked, all []string) []string {
	if len(picked) > 0 {
		return picked
	}
	return all
}

// findCorpus returns defaultCorpus from the top of the git checkout holding
// the current directory, else from the current directory, when it is a
// directory; "" when neither is.
func findCorpus(cmd *cobra.Command) string {
	var bases []string
	if out, err := exec.CommandContext(cmd.Context(), "git", "rev-parse", "--show-toplevel").Output(); err == nil {
		bases = append(bases, strings.TrimSpace(string(out)))
	}
	bases = append(bases, ".")
	for _, b := range bases {
		p := filepath.Join(b, defaultCorpus)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return filepath.Clean(p)
		}
	}
	return ""
}

// runBenchSuites is `aster bench review --suites DIR`.
func runBenchSuites(cmd *cobra.Command, g *globals, f *benchReviewFlags) error {
	if f.corpus != "" || f.expected != "" {
		return usageErr("--suites: --corpus and --expected are for the corpus run")
	}
	if st, err := os.Stat(f.suites); err != nil || !st.IsDir() {
		return usageErr("--suites %s: not a directory", f.suites)
	}
	if _, err := bench.LoadSuites(bench.SuiteLabels()); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	c, err := g.load(cmd)
	if err != nil {
		return err
	}
	if !cmd.Flags().Changed("log-level") {
		c.LogLevel = "warn"
	}
	ctx := cmd.Context()
	rg, err := openReviewGate(ctx, c, g.logger(c), f.parallel, nil)
	if err != nil {
		return err
	}
	defer rg.close()
	rep, err := bench.RunSuites(ctx, bench.SuitesConfig{Dir: f.suites, Names: config.SplitList(f.repos), Gate: rg.runner, Progress: g.stdio.Stderr})
	if rep != nil {
		if f.json {
			if werr := writeJSONTo(g.stdio.Stdout, rep); werr != nil {
				return &exitError{code: ExitFailure, err: werr}
			}
		} else {
			bench.PrintSuitesTable(g.stdio.Stdout, rep, f.markdown)
		}
		if err := saveReport(f.out, rep, g.stdio.Stderr, "aster bench review: wrote %s\n"); err != nil {
			return err
		}
	}
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	for _, s := range rep.Suites {
		if s.Error != "" {
			return &exitError{code: ExitFailure, err: fmt.Errorf("%s: %s", s.Name, s.Error)}
		}
	}
	return nil
}

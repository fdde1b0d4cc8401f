package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
)

// ReviewConfig is one run of the review benchmark: the gate `aster review`
// runs, over the change of each repository of a corpus of git bundles.
type ReviewConfig struct {
	// Corpus is a directory of NAME.bundle files.
	Corpus string
	// Repos picks bundles by NAME; empty means every bundle in Corpus.
	Repos []string
	// Expected holds NAME.json expected-findings lists (ExpectedLists when
	// nil); a repository without one gets no recall.
	Expected fs.FS
	// Gate runs the analyzers (required).
	Gate *gate.Runner
	// TempDir holds the clones ("" is the system default); each is removed
	// when its repository is done.
	TempDir string
	// Progress receives a line per repository; nil is silent.
	Progress io.Writer
	// Last, when above 0, reviews each repository's last Last commits
	// instead: the change from the tip's Last-th first-parent ancestor to
	// the tip, as one push of that many commits would be (the noise suite:
	// well-kept code, where every error and warning reported counts
	// against the gate). A bundle with fewer commits is an error.
	Last int
}

// MaxLast bounds ReviewConfig.Last.
const MaxLast = 1000

// ReviewReport is the benchmark's result, as printed and as JSON.
type ReviewReport struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Corpus   string    `json:"corpus"`
	// Last is ReviewConfig.Last (0: each bundle's usual change).
	Last  int          `json:"last,omitempty"`
	Repos []RepoReview `json:"repos"`
}

// RepoReview is one repository's review.
type RepoReview struct {
	Name string `json:"name"`
	// Error is set when the repository could not be reviewed at all; the
	// other fields are then partly empty.
	Error  string      `json:"error,omitempty"`
	Change ChangeStats `json:"change"`
	// Reported counts the findings the review reports (on the change, not
	// suppressed), by severity and by analyzer.
	Reported   int            `json:"reported"`
	BySeverity map[string]int `json:"by_severity"`
	ByAnalyzer map[string]int `json:"by_analyzer"`
	// OutsideDiff are findings off the change; Suppressed those the gate
	// found and suppressed (by the analyzer's own markers, or by policy).
	OutsideDiff int `json:"outside_diff"`
	Suppressed  int `json:"suppressed"`
	// Analyzers are the gate's analyzers, with status and duration.
	Analyzers  []gate.AnalyzerResult `json:"analyzers"`
	Conclusion string                `json:"conclusion"`
	// WallMS is the review (snapshot and gate) as the pipeline ran it;
	// PrepareMS the clone and the change's set-up before it.
	WallMS    int64 `json:"wall_ms"`
	PrepareMS int64 `json:"prepare_ms"`
	// Recall is set for a repository with an expected-findings list.
	Recall *Recall `json:"recall,omitempty"`
	// Findings are the reported findings (for reading the table).
	Findings []gate.Marked `json:"findings"`
}

// ChangeStats describe the reviewed change.
type ChangeStats struct {
	// Kind is "commit" (a two-commit bundle: its second commit against its
	// first), "tree" (the whole head tree, as if added to an empty
	// repository) or "last" (the tip against its Nth first-parent ancestor,
	// ReviewConfig.Last).
	Kind     string `json:"kind"`
	Base     string `json:"base"`
	Head     string `json:"head"`
	Files    int    `json:"files"`
	Reviewed int    `json:"reviewed"`
	Added    int    `json:"added"`
	Deleted  int    `json:"deleted"`
}

// Kinds of change the benchmark reviews.
const (
	ChangeCommit = "commit"
	ChangeTree   = "tree"
	ChangeLast   = "last"
)

// BundleSuffix names a corpus entry.
const BundleSuffix = ".bundle"

// CorpusRepos lists the NAMEs of dir's NAME.bundle files, sorted.
func CorpusRepos(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), BundleSuffix); ok && n != "" && e.Type().IsRegular() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// RunReview reviews every picked repository, one at a time (the gate
// already runs its analyzers in parallel; the machine is shared).
func RunReview(ctx context.Context, cfg ReviewConfig) (*ReviewReport, error) {
	if cfg.Gate == nil {
		return nil, errors.New("review bench: no gate")
	}
	if cfg.Last < 0 || cfg.Last > MaxLast {
		return nil, fmt.Errorf("review bench: last %d commits: want 0 to %d", cfg.Last, MaxLast)
	}
	if cfg.Expected == nil {
		cfg.Expected = ExpectedLists()
	}
	have, err := CorpusRepos(cfg.Corpus)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	names := cfg.Repos
	if len(names) == 0 {
		names = have
	}
	for _, n := range names {
		if !slices.Contains(have, n) {
			return nil, fmt.Errorf("corpus %s has no %s%s (have %s)", cfg.Corpus, n, BundleSuffix, strings.Join(have, ", "))
		}
	}
	rep := &ReviewReport{Started: time.Now().UTC(), Corpus: cfg.Corpus, Last: cfg.Last, Repos: []RepoReview{}}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		r := reviewRepo(ctx, cfg, n)
		if cfg.Progress != nil {
			if r.Error != "" {
				fmt.Fprintf(cfg.Progress, "review bench: %s: %s\n", n, r.Error)
			} else {
				fmt.Fprintf(cfg.Progress, "review bench: %s: %d reported in %.1fs\n", n, r.Reported, float64(r.WallMS)/1000)
			}
		}
		rep.Repos = append(rep.Repos, r)
	}
	rep.Finished = time.Now().UTC()
	return rep, nil
}

func reviewRepo(ctx context.Context, cfg ReviewConfig, name string) RepoReview {
	r := RepoReview{Name: name, BySeverity: map[string]int{}, ByAnalyzer: map[string]int{}, Analyzers: []gate.AnalyzerResult{}, Findings: []gate.Marked{}}
	expected, hasList, err := LoadExpected(cfg.Expected, name)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	tmp, err := os.MkdirTemp(cfg.TempDir, "aster-bench-"+name+"-")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer os.RemoveAll(tmp)
	t0 := time.Now()
	ch, stats, err := prepareChange(ctx, filepath.Join(cfg.Corpus, name+BundleSuffix), filepath.Join(tmp, name), cfg.Last)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.PrepareMS = time.Since(t0).Milliseconds()
	r.Change = stats
	t1 := time.Now()
	rep, err := review.Run(ctx, ch, review.Options{Gate: cfg.Gate, TempDir: tmp})
	r.WallMS = time.Since(t1).Milliseconds()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Change.Reviewed = rep.Files.Reviewed
	r.Analyzers = rep.Analyzers
	r.Conclusion = string(rep.Conclusion)
	for _, a := range rep.Analyzers {
		r.Suppressed += a.Suppressed
	}
	findings := make([]gate.Marked, len(rep.Findings))
	for i, m := range rep.Findings {
		if suppressed(m) {
			r.Suppressed++
			m.Reported = false
		} else if !m.Reported {
			r.OutsideDiff++
		}
		findings[i] = m
		if m.Reported {
			r.Reported++
			r.BySeverity[string(m.Severity)]++
			r.ByAnalyzer[m.Analyzer]++
			r.Findings = append(r.Findings, m)
		}
	}
	if hasList {
		rc := Score(expected, findings, diff.NewIndex(ch.Diff))
		r.Recall = &rc
	}
	return r
}

// suppressed reports whether a path class's policy took m out of the review.
func suppressed(m gate.Marked) bool { return m.Suppressed != "" }

// PrepareChange clones bundle into dir (a new directory) and returns the
// change the benchmark reviews there, as `aster review` would build it:
// a two-commit bundle (a base tree and a head tree) is reviewed as its head
// commit against its base; any other bundle as its whole head tree, added to
// an empty repository (so every line of every file is on the change).
func PrepareChange(ctx context.Context, bundle, dir string) (*review.Change, ChangeStats, error) {
	return prepareChange(ctx, bundle, dir, 0)
}

// PrepareLast is PrepareChange for the last n commits of bundle's tip: the
// tip against its nth first-parent ancestor (Kind ChangeLast).
func PrepareLast(ctx context.Context, bundle, dir string, n int) (*review.Change, ChangeStats, error) {
	if n < 1 || n > MaxLast {
		return nil, ChangeStats{}, fmt.Errorf("last %d commits: want 1 to %d", n, MaxLast)
	}
	return prepareChange(ctx, bundle, dir, n)
}

func prepareChange(ctx context.Context, bundle, dir string, last int) (*review.Change, ChangeStats, error) {
	var st ChangeStats
	if _, err := os.Stat(bundle); err != nil {
		return nil, st, err
	}
	abs, err := filepath.Abs(bundle)
	if err != nil {
		return nil, st, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, st, err
	}
	if _, err := runGit(ctx, dir, "init", "-q"); err != nil {
		return nil, st, err
	}
	if _, err := runGit(ctx, dir, "config", "gc.auto", "0"); err != nil {
		return nil, st, err
	}
	tip, err := bundleTip(ctx, dir, abs)
	if err != nil {
		return nil, st, err
	}
	if _, err := runGit(ctx, dir, "fetch", "-q", "--no-tags", abs, "+"+tip.ref+":refs/bench/tip"); err != nil {
		return nil, st, err
	}
	head := tip.sha
	commits, err := runGit(ctx, dir, "rev-list", "--count", head)
	if err != nil {
		return nil, st, err
	}
	parents, err := runGit(ctx, dir, "rev-list", "--parents", "-n", "1", head)
	if err != nil {
		return nil, st, err
	}
	var base string
	switch {
	case last > 0:
		st.Kind = ChangeLast
		if base, err = runGit(ctx, dir, "rev-parse", "-q", "--verify", fmt.Sprintf("%s~%d^{commit}", head, last)); err != nil {
			return nil, st, fmt.Errorf("%s: fewer than %d first-parent commits before its tip (%s in all)", filepath.Base(bundle), last+1, commits)
		}
	case commits == "2" && len(strings.Fields(parents)) == 2:
		st.Kind, base = ChangeCommit, strings.Fields(parents)[1]
	default:
		st.Kind = ChangeTree
		empty, err := runGit(ctx, dir, "hash-object", "-t", "tree", "-w", "--stdin")
		if err != nil {
			return nil, st, err
		}
		if base, err = runGit(ctx, dir, "commit-tree", empty, "-m", "aster bench: empty base"); err != nil {
			return nil, st, err
		}
		if head, err = runGit(ctx, dir, "commit-tree", tip.sha+"^{tree}", "-p", base, "-m", "aster bench: the whole tree of "+tip.sha); err != nil {
			return nil, st, err
		}
	}
	// Check the head out, so the review sees a clean working tree.
	if _, err := runGit(ctx, dir, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", head); err != nil {
		return nil, st, err
	}
	ch, err := review.FromGit(ctx, review.GitOptions{Dir: dir, Base: base, Head: head})
	if err != nil {
		return nil, st, err
	}
	st.Base, st.Head, st.Files = base, head, len(ch.Diff)
	if st.Kind == ChangeTree {
		st.Head = tip.sha
	}
	for _, f := range ch.Diff {
		a, d := f.Stats()
		st.Added += a
		st.Deleted += d
	}
	return ch, st, nil
}

type bundleRef struct{ sha, ref string }

// bundleTip picks the bundle's HEAD, else refs/heads/main or master, else its
// only head.
func bundleTip(ctx context.Context, dir, bundle string) (bundleRef, error) {
	out, err := runGit(ctx, dir, "bundle", "list-heads", bundle)
	if err != nil {
		return bundleRef{}, err
	}
	refs := map[string]string{}
	var order []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		sha, ref, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok || len(sha) < 40 {
			continue
		}
		refs[ref] = sha
		order = append(order, ref)
	}
	for _, want := range []string{"HEAD", "refs/heads/main", "refs/heads/master"} {
		if sha, ok := refs[want]; ok {
			// A bundle's HEAD cannot be fetched by name: fetch the branch it
			// points at (one with the same commit).
			if want == "HEAD" {
				for _, r := range order {
					if r != "HEAD" && refs[r] == sha {
						return bundleRef{sha: sha, ref: r}, nil
					}
				}
				continue
			}
			return bundleRef{sha: sha, ref: want}, nil
		}
	}
	heads := slices.DeleteFunc(order, func(r string) bool { return r == "HEAD" })
	if len(heads) == 1 {
		return bundleRef{sha: refs[heads[0]], ref: heads[0]}, nil
	}
	return bundleRef{}, fmt.Errorf("bundle %s: no HEAD, main or master among %d heads", bundle, len(heads))
}

// runGit runs git in dir with a fixed identity and dates (commit-tree needs
// them) and returns its trimmed output (capped; git's message on failure).
func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
		"GIT_AUTHOR_NAME=aster bench", "GIT_AUTHOR_EMAIL=bench@aster.invalid", "GIT_AUTHOR_DATE=2000-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=aster bench", "GIT_COMMITTER_EMAIL=bench@aster.invalid", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z")
	if args[0] == "hash-object" {
		cmd.Stdin = strings.NewReader("")
	}
	var out, stderr bytes.Buffer
	cmd.Stdout = &capWriter{b: &out, n: 1 << 20}
	cmd.Stderr = &capWriter{b: &stderr, n: 4096}
	if err := cmd.Run(); err != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], why)
	}
	return strings.TrimSpace(out.String()), nil
}

type capWriter struct {
	b *bytes.Buffer
	n int
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.n - w.b.Len(); room > 0 {
		w.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

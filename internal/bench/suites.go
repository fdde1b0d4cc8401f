package bench

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/gate/taint"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/review"
)

// Suite is a labelled collection of public vulnerable code: where it comes
// from, and every sink site considered in it, vulnerable or not, labelled by
// reading the code. Its code is a git bundle kept outside the repository
// (SuitesConfig.Dir/NAME.bundle); the labels are internal/bench/suites/NAME.json.
type Suite struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream"`
	Commit   string `json:"commit"`
	Licence  string `json:"licence"`
	// Heldout marks a suite labelled by someone who had not read the
	// analyzers it scores, after they were written: its score is the one to
	// trust. The other suites were labelled while the rules were written.
	Heldout bool `json:"heldout,omitempty"`
	// Notes say how the labels were chosen (what was left out and why).
	Notes string `json:"notes,omitempty"`
	Sites []Site `json:"sites"`
}

// Site is one sink site: the line of the call (or return, or assignment)
// that would be the weakness, its category (a taint category), and whether
// it is one. Related are other lines of the same site where an analyzer
// without data flow reports it (the line that builds the SQL text that the
// sink's line executes): a finding there counts for the site too.
type Site struct {
	Path       string `json:"path"`
	Line       int    `json:"line"`
	Related    []int  `json:"related,omitempty"`
	Category   string `json:"category"`
	Vulnerable bool   `json:"vulnerable"`
	Why        string `json:"why"`
}

// Bounds of a suite's labels, which are read from a file.
const (
	MaxSuiteBytes = 4 << 20
	MaxSites      = 5000
	maxSiteWhy    = 300
	maxRelated    = 8
)

// ParseSuite reads and checks a suite's labels.
func ParseSuite(r io.Reader) (*Suite, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxSuiteBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSuiteBytes {
		return nil, fmt.Errorf("suite: over %d bytes", MaxSuiteBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Suite
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	if dec.More() {
		return nil, errors.New("suite: trailing data")
	}
	if !nameOK(s.Name) || s.Upstream == "" || s.Commit == "" || s.Licence == "" {
		return nil, errors.New("suite: name, upstream, commit and licence are required")
	}
	if len(s.Sites) == 0 || len(s.Sites) > MaxSites {
		return nil, fmt.Errorf("suite %s: %d sites, want 1 to %d", s.Name, len(s.Sites), MaxSites)
	}
	seen := map[string]bool{}
	for i, st := range s.Sites {
		bad := func(why string) error {
			return fmt.Errorf("suite %s: site %d (%s:%d): %s", s.Name, i+1, st.Path, st.Line, why)
		}
		switch {
		case st.Path == "" || strings.HasPrefix(st.Path, "/") || path.Clean(st.Path) != st.Path || strings.HasPrefix(st.Path, "../") ||
			strings.ContainsAny(st.Path, "\\\x00\n"):
			return nil, bad("path must be clean, relative, with forward slashes")
		case st.Line < 1:
			return nil, bad("line must be 1 or more")
		case len(st.Related) > maxRelated:
			return nil, bad(fmt.Sprintf("more than %d related lines", maxRelated))
		case taint.Categories[st.Category] == nil:
			return nil, bad(fmt.Sprintf("category %q is not a taint category", st.Category))
		case strings.TrimSpace(st.Why) == "" || len(st.Why) > maxSiteWhy || strings.ContainsAny(st.Why, "\n\r"):
			return nil, bad(fmt.Sprintf("why must be one line of 1 to %d bytes", maxSiteWhy))
		}
		for _, l := range st.Related {
			if l < 1 {
				return nil, bad("a related line is below 1")
			}
		}
		key := st.Path + ":" + strconv.Itoa(st.Line) + " " + st.Category
		if seen[key] {
			return nil, bad("listed twice")
		}
		seen[key] = true
	}
	return &s, nil
}

func nameOK(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

//go:embed suites/*.json
var suitesFS embed.FS

// SuiteLabels are the suites' labels kept in the repository
// (internal/bench/suites/NAME.json).
func SuiteLabels() fs.FS {
	sub, err := fs.Sub(suitesFS, "suites")
	if err != nil {
		panic(err) // embedded at build time
	}
	return sub
}

// LoadSuites reads every NAME.json of fsys, sorted by name.
func LoadSuites(fsys fs.FS) ([]*Suite, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []*Suite
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		s, err := ParseSuite(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if s.Name+".json" != n {
			return nil, fmt.Errorf("%s: names suite %q", n, s.Name)
		}
		out = append(out, s)
	}
	return out, nil
}

// The systems a suite is scored for: the whole gate, the gate as it was
// before the taint engine (every analyzer but taint-*, Bandit's superseded
// findings counted), Bandit alone and the Python taint engine alone.
const (
	SystemGate          = "gate"
	SystemGateWithout   = "gate-without-taint"
	SystemBandit        = "bandit"
	SystemESLint        = "eslint"
	SystemTaintPython   = "taint-python"
	SystemTaintJS       = "taint-js"
	taintAnalyzerPrefix = "taint-"
)

// Systems lists the systems in the order they are printed. The analyzers
// alone (Bandit, ESLint, each taint engine) are printed when they ran in
// some suite.
var Systems = []string{SystemGate, SystemGateWithout, SystemBandit, SystemESLint, SystemTaintPython, SystemTaintJS}

// analyzerSystems are the systems that are one analyzer alone.
var analyzerSystems = map[string]bool{SystemBandit: true, SystemESLint: true, SystemTaintPython: true, SystemTaintJS: true}

// SuitesConfig is one run of the labelled-suite benchmark.
type SuitesConfig struct {
	// Dir holds NAME.bundle for each suite.
	Dir string
	// Names picks suites; empty means every suite with a bundle in Dir.
	Names []string
	// Labels hold NAME.json (SuiteLabels when nil).
	Labels fs.FS
	// Gate runs the analyzers (required).
	Gate     *gate.Runner
	TempDir  string
	Progress io.Writer
}

// SuitesReport is the result: each suite's scores, and the scores of all
// suites together (each category's sites added up).
type SuitesReport struct {
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Dir      string        `json:"dir"`
	Suites   []SuiteResult `json:"suites"`
	Total    Scores        `json:"total"`
	// Systems are the systems scored: the gate with and without the taint
	// engines, and each analyzer alone that ran ok in some suite.
	Systems []string `json:"systems"`
}

// SuiteResult is one suite's run.
type SuiteResult struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream"`
	Commit   string `json:"commit"`
	Heldout  bool   `json:"heldout,omitempty"`
	Error    string `json:"error,omitempty"`
	Files    int    `json:"files"`
	WallMS   int64  `json:"wall_ms"`
	// Analyzers are the gate's analyzers, with status, time and (for the
	// taint engines) their own account of files, time and memory.
	Analyzers []gate.AnalyzerResult `json:"analyzers"`
	Scores    Scores                `json:"scores"`
	// Misses are vulnerable sites a taint engine did not find that the
	// analyzer without data flow of its language did (Bandit, ESLint): what
	// the taint engine must also find.
	Misses []Site `json:"missed_by_taint"`
	// Sites are every labelled site with the systems that reported it.
	Sites []SiteOutcome `json:"sites,omitempty"`
}

// Scores are per-category counts and rates for each system.
type Scores struct {
	Categories []CategoryScore `json:"categories"`
	// Average is each system's score averaged over the categories with a
	// vulnerable site.
	Average map[string]float64 `json:"average"`
	// MaxFPR is each system's highest false-positive rate of a category.
	MaxFPR map[string]float64 `json:"max_fpr"`
}

// CategoryScore is one category's sites and how each system did.
type CategoryScore struct {
	Category  string          `json:"category"`
	Positives int             `json:"positives"`
	Negatives int             `json:"negatives"`
	Systems   map[string]Rate `json:"systems"`
}

// Rate is one system on one category: true and false positives, their
// rates, and TPR − FPR (as OWASP's benchmarks score).
type Rate struct {
	TP    int     `json:"tp"`
	FP    int     `json:"fp"`
	TPR   float64 `json:"tpr"`
	FPR   float64 `json:"fpr"`
	Score float64 `json:"score"`
}

// RunSuites reviews each suite's whole tree (as `aster bench review` does a
// corpus repository without history) and scores the findings on its sites.
func RunSuites(ctx context.Context, cfg SuitesConfig) (*SuitesReport, error) {
	if cfg.Gate == nil {
		return nil, errors.New("suites bench: no gate")
	}
	if cfg.Labels == nil {
		cfg.Labels = SuiteLabels()
	}
	suites, err := LoadSuites(cfg.Labels)
	if err != nil {
		return nil, err
	}
	have, err := CorpusRepos(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("suites: %w", err)
	}
	var picked []*Suite
	for _, s := range suites {
		if len(cfg.Names) > 0 && !slices.Contains(cfg.Names, s.Name) {
			continue
		}
		if !slices.Contains(have, s.Name) {
			if len(cfg.Names) > 0 {
				return nil, fmt.Errorf("suites: no %s%s in %s", s.Name, BundleSuffix, cfg.Dir)
			}
			continue
		}
		picked = append(picked, s)
	}
	for _, n := range cfg.Names {
		if !slices.ContainsFunc(suites, func(s *Suite) bool { return s.Name == n }) {
			return nil, fmt.Errorf("suites: no labels for %s", n)
		}
	}
	if len(picked) == 0 {
		return nil, fmt.Errorf("suites: no labelled suite has a bundle in %s", cfg.Dir)
	}
	rep := &SuitesReport{Started: time.Now().UTC(), Dir: cfg.Dir, Suites: []SuiteResult{}}
	var all []siteResult
	for _, s := range picked {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		r, sites := runSuite(ctx, cfg, s)
		if cfg.Progress != nil {
			if r.Error != "" {
				fmt.Fprintf(cfg.Progress, "suites bench: %s: %s\n", s.Name, r.Error)
			} else {
				fmt.Fprintf(cfg.Progress, "suites bench: %s: %d sites in %.1fs\n", s.Name, len(s.Sites), float64(r.WallMS)/1000)
			}
		}
		rep.Suites = append(rep.Suites, r)
		all = append(all, sites...)
	}
	rep.Total = score(all)
	ran := map[string]bool{}
	for _, r := range rep.Suites {
		for _, a := range r.Analyzers {
			if a.Status == gate.StatusOK {
				ran[a.Name] = true
			}
		}
	}
	for _, sys := range Systems {
		if !analyzerSystems[sys] || ran[sys] {
			rep.Systems = append(rep.Systems, sys)
		}
	}
	rep.Finished = time.Now().UTC()
	return rep, nil
}

// siteResult is a site and the systems that reported it.
type siteResult struct {
	Site
	found map[string]bool
}

// SiteOutcome is a labelled site and the systems that reported it, so the
// misses and false positives behind a score can be read site by site.
type SiteOutcome struct {
	Site
	Found []string `json:"found"`
}

// matchSites credits each site with the systems of the items reported in
// its category on its line or one of its related lines.
func matchSites(labelled []Site, items []item) []siteResult {
	sites := make([]siteResult, len(labelled))
	for i, st := range labelled {
		sites[i] = siteResult{Site: st, found: map[string]bool{}}
		lines := append([]int{st.Line}, st.Related...)
		for _, it := range items {
			if it.path != st.Path || !slices.Contains(lines, it.line) || it.category != st.Category {
				continue
			}
			for _, sys := range it.systems {
				sites[i].found[sys] = true
			}
		}
	}
	return sites
}

// outcomes lists each site with the systems that found it, in Systems order.
func outcomes(sites []siteResult) []SiteOutcome {
	out := make([]SiteOutcome, len(sites))
	for i, s := range sites {
		out[i] = SiteOutcome{Site: s.Site, Found: []string{}}
		for _, sys := range Systems {
			if s.found[sys] {
				out[i].Found = append(out[i].Found, sys)
			}
		}
	}
	return out
}

func runSuite(ctx context.Context, cfg SuitesConfig, s *Suite) (SuiteResult, []siteResult) {
	r := SuiteResult{Name: s.Name, Upstream: s.Upstream, Commit: s.Commit, Heldout: s.Heldout, Analyzers: []gate.AnalyzerResult{}, Misses: []Site{}}
	tmp, err := os.MkdirTemp(cfg.TempDir, "aster-suite-"+s.Name+"-")
	if err != nil {
		r.Error = err.Error()
		return r, nil
	}
	defer os.RemoveAll(tmp)
	ch, stats, err := PrepareChange(ctx, filepath.Join(cfg.Dir, s.Name+BundleSuffix), filepath.Join(tmp, s.Name))
	if err != nil {
		r.Error = err.Error()
		return r, nil
	}
	r.Files = stats.Files
	if ch.ConfigSource == "defaults" {
		// A suite's every site is scored wherever it lies (some are test
		// files of their upstream): no class suppresses anything, so every
		// analyzer reads every file, as a repository that reports its tests
		// would have it.
		ch.Config, err = repoconfig.Parse([]byte(suiteClasses))
		if err != nil {
			r.Error = err.Error()
			return r, nil
		}
	}
	t0 := time.Now()
	rep, err := review.Run(ctx, ch, review.Options{Gate: cfg.Gate, TempDir: tmp})
	r.WallMS = time.Since(t0).Milliseconds()
	if err != nil {
		r.Error = err.Error()
		return r, nil
	}
	r.Analyzers = rep.Analyzers
	sites := matchSites(s.Sites, attributions(rep))
	r.Sites = outcomes(sites)
	for i, st := range s.Sites {
		if st.Vulnerable && sites[i].found[SystemBandit] && !sites[i].found[SystemTaintPython] {
			r.Misses = append(r.Misses, st)
		}
		if st.Vulnerable && sites[i].found[SystemESLint] && !sites[i].found[SystemTaintJS] {
			r.Misses = append(r.Misses, st)
		}
	}
	r.Scores = score(sites)
	return r, sites
}

// suiteClasses is the .aster.yml a suite without its own is reviewed with.
const suiteClasses = `classes:
  tests: {suppress: []}
  fixtures: {suppress: []}
  docs: {suppress: []}
  examples: {suppress: []}
  vendored: {suppress: []}
  generated: {suppress: []}
`

// item is one analyzer's report of one category on one line, and the
// systems it counts for.
type item struct {
	path     string
	line     int
	category string
	systems  []string
}

// attributions lists what each analyzer reported: every finding of the
// review (a merged finding once per analyzer it names) and the findings it
// superseded.
func attributions(rep *review.Report) []item {
	var out []item
	add := func(f finding.Finding, analyzer, rule string, cwes []string, superseded bool) {
		c := Category(analyzer, rule, cwes)
		if c == "" || f.StartLine <= 0 {
			return
		}
		var sys []string
		if !superseded {
			sys = append(sys, SystemGate)
		}
		if !strings.HasPrefix(analyzer, taintAnalyzerPrefix) {
			sys = append(sys, SystemGateWithout)
		}
		if analyzerSystems[analyzer] {
			sys = append(sys, analyzer)
		}
		out = append(out, item{path: f.Path, line: f.StartLine, category: c, systems: sys})
	}
	for _, m := range rep.Findings {
		add(m.Finding, m.Analyzer, m.RuleID, m.CWE, false)
		for _, a := range m.Also {
			an, rule, _ := strings.Cut(a, "/")
			add(m.Finding, an, rule, m.CWE, false)
		}
	}
	for _, f := range rep.Superseded {
		add(f, f.Analyzer, f.RuleID, f.CWE, true)
	}
	return out
}

// cweCategories maps the CWEs analyzers name to the suites' categories.
var cweCategories = map[string]string{
	"CWE-89": "sql-injection", "CWE-564": "sql-injection", "CWE-943": "nosql-injection",
	"CWE-78": "command-injection", "CWE-77": "command-injection", "CWE-88": "command-injection",
	"CWE-94": "code-injection", "CWE-95": "code-injection",
	"CWE-22": "path-traversal", "CWE-23": "path-traversal", "CWE-36": "path-traversal", "CWE-73": "path-traversal",
	"CWE-601": "open-redirect", "CWE-79": "xss", "CWE-80": "xss", "CWE-1336": "template-injection",
	"CWE-90": "ldap-injection", "CWE-643": "xpath-injection", "CWE-611": "xxe", "CWE-776": "xxe",
	"CWE-502": "insecure-deserialization", "CWE-918": "ssrf", "CWE-501": "trust-boundary",
	"CWE-614": "insecure-cookie", "CWE-1004": "insecure-cookie", "CWE-347": "jwt-unverified",
	"CWE-330": "weak-randomness", "CWE-338": "weak-randomness",
}

// banditCategories are the categories of Bandit's tests in the suites'
// terms (Bandit's own CWEs are coarse: B608 and B102 share none).
var banditCategories = map[string]string{
	"B301": "insecure-deserialization", "B302": "insecure-deserialization", "B403": "insecure-deserialization",
	"B506": "insecure-deserialization", "B701": "xss", "B702": "xss",
}

// Category is the suites' category of an analyzer's rule: the taint
// engines' rule ids name it, Bandit's tests are mapped, and other analyzers'
// rules go by their CWE or a category named in the rule id.
func Category(analyzer, rule string, cwes []string) string {
	if c := taint.Category(rule); c != "" {
		return c
	}
	if analyzer == "bandit" {
		if c := gate.BanditCategory(rule); c != "" {
			return c
		}
		if c, ok := banditCategories[rule]; ok {
			return c
		}
		return ""
	}
	for _, w := range cwes {
		if c, ok := cweCategories[w]; ok {
			return c
		}
	}
	for c := range taint.Categories {
		if strings.HasSuffix(rule, "."+c) || strings.HasSuffix(rule, "/"+c) {
			return c
		}
	}
	return ""
}

func score(sites []siteResult) Scores {
	byCat := map[string]*CategoryScore{}
	for _, s := range sites {
		cs := byCat[s.Category]
		if cs == nil {
			cs = &CategoryScore{Category: s.Category, Systems: map[string]Rate{}}
			byCat[s.Category] = cs
		}
		if s.Vulnerable {
			cs.Positives++
		} else {
			cs.Negatives++
		}
		for _, sys := range Systems {
			r := cs.Systems[sys]
			if s.found[sys] {
				if s.Vulnerable {
					r.TP++
				} else {
					r.FP++
				}
			}
			cs.Systems[sys] = r
		}
	}
	out := Scores{Categories: []CategoryScore{}, Average: map[string]float64{}, MaxFPR: map[string]float64{}}
	for _, cs := range byCat {
		for sys, r := range cs.Systems {
			if cs.Positives > 0 {
				r.TPR = float64(r.TP) / float64(cs.Positives)
			}
			if cs.Negatives > 0 {
				r.FPR = float64(r.FP) / float64(cs.Negatives)
			}
			r.Score = r.TPR - r.FPR
			cs.Systems[sys] = r
		}
		out.Categories = append(out.Categories, *cs)
	}
	slices.SortFunc(out.Categories, func(a, b CategoryScore) int { return cmp.Compare(a.Category, b.Category) })
	for _, sys := range Systems {
		n := 0
		sum := 0.0
		for _, cs := range out.Categories {
			if cs.Positives == 0 {
				continue
			}
			n++
			sum += cs.Systems[sys].Score
			out.MaxFPR[sys] = max(out.MaxFPR[sys], cs.Systems[sys].FPR)
		}
		if n > 0 {
			out.Average[sys] = sum / float64(n)
		}
	}
	return out
}

// PrintSuitesTable writes the scores of all suites together, per category
// (TPR − FPR for each system, and the FPR behind it), then each suite's
// averages, the taint engine's cost, and the vulnerable sites Bandit found
// and the taint engine missed.
func PrintSuitesTable(w io.Writer, rep *SuitesReport, markdown bool) {
	systems := rep.Systems
	if len(systems) == 0 {
		systems = Systems
	}
	head := []string{"category", "vulnerable", "safe"}
	for _, sys := range systems {
		head = append(head, sys+" TPR−FPR (FPR)")
	}
	rows := [][]string{}
	for _, cs := range rep.Total.Categories {
		row := []string{cs.Category, strconv.Itoa(cs.Positives), strconv.Itoa(cs.Negatives)}
		for _, sys := range systems {
			r := cs.Systems[sys]
			row = append(row, fmt.Sprintf("%s (%s)", pct(r.Score), pct(r.FPR)))
		}
		rows = append(rows, row)
	}
	avg := []string{"average", "", ""}
	for _, sys := range systems {
		avg = append(avg, fmt.Sprintf("%s (max FPR %s)", pct(rep.Total.Average[sys]), pct(rep.Total.MaxFPR[sys])))
	}
	rows = append(rows, avg)
	printTable(w, head, rows, markdown)
	fmt.Fprintln(w)
	for _, s := range rep.Suites {
		if s.Error != "" {
			fmt.Fprintf(w, "%s: not reviewed: %s\n", s.Name, s.Error)
			continue
		}
		parts := []string{}
		for _, sys := range systems {
			parts = append(parts, fmt.Sprintf("%s %s", sys, pct(s.Scores.Average[sys])))
		}
		cost := ""
		for _, a := range s.Analyzers {
			if a.Stats != nil {
				cost += fmt.Sprintf("; %s: %d files in %d ms, %d MB peak", a.Name, a.Stats.Files, a.Stats.MS, a.Stats.MaxRSSKB/1024)
			}
			if a.Status != gate.StatusOK && a.Status != gate.StatusSkipped {
				cost += fmt.Sprintf("; %s %s: %s", a.Name, a.Status, a.Reason)
			}
		}
		kind := ""
		if s.Heldout {
			kind = ", held-out"
		}
		fmt.Fprintf(w, "%s %s (%s @ %s%s, %.1fs): %s%s\n", bullet(markdown), s.Name, s.Upstream, review.ShortSHA(s.Commit), kind, float64(s.WallMS)/1000, strings.Join(parts, ", "), cost)
		for _, m := range s.Misses {
			fmt.Fprintf(w, "  %s found without data flow, missed by the taint engine: %s:%d %s\n", bullet(markdown), m.Path, m.Line, m.Category)
		}
	}
}

func pct(f float64) string { return fmt.Sprintf("%.0f %%", f*100) }

func printTable(w io.Writer, head []string, rows [][]string, markdown bool) {
	if markdown {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		return
	}
	widths := make([]int, len(head))
	for _, r := range append([][]string{head}, rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range append([][]string{head}, rows...) {
		for i, c := range r {
			fmt.Fprintf(w, "%-*s  ", widths[i], c)
		}
		fmt.Fprintln(w)
	}
}

package finding

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"github.com/asterhq/aster/internal/textclip"
)

// Format names an analyzer output format.
type Format string

// The formats Aster reads.
const (
	FormatSARIF      Format = "sarif"           // SARIF 2.1.0
	FormatSemgrep    Format = "semgrep-json"    // semgrep --json
	FormatShellcheck Format = "shellcheck-json" // shellcheck -f json1 (or json)
	FormatBandit     Format = "bandit-json"     // bandit -f json
	FormatAstGrep    Format = "ast-grep-json"   // ast-grep scan --json=stream
	FormatGitleaks   Format = "gitleaks-json"   // gitleaks --report-format json
	FormatESLint     Format = "eslint-json"     // eslint --format json
	FormatActionlint Format = "actionlint-json" // actionlint -format '{{json .}}'
	FormatCppcheck   Format = "cppcheck-xml"    // cppcheck --xml
	FormatKICS       Format = "kics-json"       // kics scan --report-formats json
)

// Formats lists the readable formats.
var Formats = []Format{FormatSARIF, FormatSemgrep, FormatShellcheck, FormatBandit, FormatAstGrep, FormatGitleaks, FormatESLint, FormatActionlint, FormatCppcheck, FormatKICS}

// ParseFormat validates a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("output format %q is not one of sarif, semgrep-json, shellcheck-json, bandit-json, ast-grep-json, gitleaks-json, eslint-json, actionlint-json, cppcheck-xml, kics-json", s)
}

// ErrInvalid marks analyzer output that cannot be read.
var ErrInvalid = errors.New("invalid analyzer output")

// ErrTooLarge marks analyzer output over ReadOptions.MaxBytes.
var ErrTooLarge = errors.New("analyzer output too large")

// ReadOptions tune a reader.
type ReadOptions struct {
	// Analyzer is written into every Finding.
	Analyzer string
	// Root is the directory the analyzer ran in (e.g. /work); absolute paths
	// under it, and file:// URIs, are made relative to it.
	Root string
	// MaxBytes bounds the input; MaxFindings the findings kept (the rest are
	// counted in ReadResult.Dropped). Past MaxFindings the least severe are
	// the ones dropped: an error is kept before a warning, a warning before
	// a note, whatever order the tool printed them in.
	MaxBytes    int64
	MaxFindings int
}

// Defaults for ReadOptions.
const (
	DefaultMaxBytes    = 32 << 20
	DefaultMaxFindings = 5000
	maxMessageBytes    = 4 << 10
	maxIDBytes         = 256
	maxToolErrors      = 20
	maxNotices         = 50
)

func (o ReadOptions) withDefaults() ReadOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxFindings <= 0 {
		o.MaxFindings = DefaultMaxFindings
	}
	if o.Root == "" {
		o.Root = "/work"
	}
	return o
}

// ReadResult is what a reader found.
type ReadResult struct {
	Findings []Finding `json:"findings"`
	// ToolErrors are problems the tool reported about its own run (a file it
	// could not parse, a rule that failed), capped at a few.
	ToolErrors []string `json:"tool_errors,omitempty"`
	// Dropped counts findings past MaxFindings; Suppressed those the source
	// marked as suppressed (nosemgrep, SARIF suppressions).
	Dropped    int `json:"dropped,omitempty"`
	Suppressed int `json:"suppressed,omitempty"`
	// Notices are the tool's warnings about its own run that name a file
	// (a file it left out, and why), capped at a few.
	Notices []Notice `json:"notices,omitempty"`
	// Stats are what the tool said of its run's cost (SARIF invocation
	// properties "files", "ms", "max_rss_kb"), when it said.
	Stats *RunStats `json:"stats,omitempty"`
	// Judged are the sinks a taint engine judged (invocation property
	// "judged"), nil for other tools.
	Judged Judged `json:"-"`
}

// Notice is a tool's warning about one file of its run.
type Notice struct {
	Path string `json:"path,omitempty"`
	Text string `json:"text"`
}

// RunStats are a tool's own account of its run: files analysed, wall time
// and peak resident memory; where the tool says, its CPU time and the file
// that took longest (the taint engines: CPU time in Python, wall time of the
// worker in JavaScript).
type RunStats struct {
	Files     int    `json:"files"`
	MS        int64  `json:"ms"`
	MaxRSSKB  int64  `json:"max_rss_kb"`
	CPUMS     int64  `json:"cpu_ms,omitempty"`
	MaxFileMS int64  `json:"max_file_ms,omitempty"`
	Slowest   string `json:"slowest,omitempty"`
}

// Read reads analyzer output of the given format.
func Read(format Format, r io.Reader, opts ReadOptions) (ReadResult, error) {
	switch format {
	case FormatSARIF:
		return ReadSARIF(r, opts)
	case FormatSemgrep:
		return ReadSemgrep(r, opts)
	case FormatShellcheck:
		return ReadShellcheck(r, opts)
	case FormatBandit:
		return ReadBandit(r, opts)
	case FormatAstGrep:
		return ReadAstGrep(r, opts)
	case FormatGitleaks:
		return ReadGitleaks(r, opts)
	case FormatESLint:
		return ReadESLint(r, opts)
	case FormatActionlint:
		return ReadActionlint(r, opts)
	case FormatCppcheck:
		return ReadCppcheck(r, opts)
	case FormatKICS:
		return ReadKICS(r, opts)
	}
	return ReadResult{}, fmt.Errorf("%w: unknown format %q", ErrInvalid, format)
}

// readCapped reads all of r up to max bytes.
func readCapped(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("read analyzer output: %w", err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// decodeDocuments decodes one or more concatenated JSON documents (several
// invocations of a tool through xargs each print one) into new values of T.
// Each document must be an object with the required top-level keys, so that
// an unrelated JSON value is not mistaken for an empty report.
func decodeDocuments[T any](data []byte, what string, required ...string) ([]T, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []T
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, what, err)
		}
		if len(required) > 0 {
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(raw, &keys); err != nil {
				return nil, fmt.Errorf("%w: %s: not a JSON object", ErrInvalid, what)
			}
			for _, k := range required {
				if _, ok := keys[k]; !ok {
					return nil, fmt.Errorf("%w: %s: no %q field", ErrInvalid, what, k)
				}
			}
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, what, err)
		}
		docs = append(docs, v)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w: %s: empty output", ErrInvalid, what)
	}
	return docs, nil
}

// collector applies the caps and the common normalisation to findings.
type collector struct {
	opts ReadOptions
	res  ReadResult
	// byRank holds the indexes in res.Findings of the findings of each
	// severity rank, so that a full collector can replace its least severe.
	byRank [4][]int
}

// startRead is how every reader begins: opts with their defaults, and all of
// r read within MaxBytes.
func startRead(r io.Reader, opts ReadOptions) (*collector, []byte, error) {
	c := newCollector(opts)
	data, err := readCapped(r, c.opts.MaxBytes)
	return c, data, err
}

func newCollector(opts ReadOptions) *collector {
	return &collector{opts: opts.withDefaults(), res: ReadResult{Findings: []Finding{}}}
}

func (c *collector) add(f Finding) {
	if len(c.res.Findings) >= c.opts.MaxFindings && f.Severity == Note {
		c.res.Dropped++ // a note replaces nothing: dropped before its text is read
		return
	}
	f.Analyzer = c.opts.Analyzer
	f.Path = cleanPath(f.Path, c.opts.Root)
	f.RuleID = clip(textclip.OneLine(f.RuleID, 0), maxIDBytes)
	f.RuleName = clip(textclip.OneLine(f.RuleName, 0), maxIDBytes)
	f.Message = clip(strings.TrimSpace(f.Message), maxMessageBytes)
	if f.Message == "" {
		f.Message = f.RuleID
	}
	if f.Severity.Rank() == 0 {
		f.Severity = Warning
	}
	if f.StartLine < 0 {
		f.StartLine = 0
	}
	if f.EndLine < f.StartLine {
		f.EndLine = f.StartLine
	}
	if f.StartColumn < 0 {
		f.StartColumn = 0
	}
	if f.EndColumn < 0 || (f.EndLine == f.StartLine && f.EndColumn < f.StartColumn) {
		f.EndColumn = 0
	}
	if !safeURL(f.HelpURI) {
		f.HelpURI = ""
	}
	f.CWE = normalizeCWEs(f.CWE)
	for i := range f.Flow {
		f.Flow[i].Path = cleanPath(f.Flow[i].Path, c.opts.Root)
		f.Flow[i].Text = clip(textclip.OneLine(f.Flow[i].Text, 0), MaxFlowStepText)
		if f.Flow[i].Line < 0 {
			f.Flow[i].Line = 0
		}
	}
	if f.Fix != nil {
		f.Fix.Description = clip(f.Fix.Description, maxMessageBytes)
		for i := range f.Fix.Replacements {
			f.Fix.Replacements[i].Path = cleanPath(f.Fix.Replacements[i].Path, c.opts.Root)
			f.Fix.Replacements[i].Text = clip(f.Fix.Replacements[i].Text, maxMessageBytes)
		}
		if len(f.Fix.Replacements) == 0 {
			f.Fix = nil
		}
	}
	c.keep(f)
}

// keep adds a normalised finding within MaxFindings: when the collector is
// full, f takes the place of the last kept finding of the lowest severity
// below f's, or is dropped if there is none.
func (c *collector) keep(f Finding) {
	rank := f.Severity.Rank()
	if len(c.res.Findings) < c.opts.MaxFindings {
		c.byRank[rank] = append(c.byRank[rank], len(c.res.Findings))
		c.res.Findings = append(c.res.Findings, f)
		return
	}
	c.res.Dropped++
	for r := 0; r < rank; r++ {
		if n := len(c.byRank[r]); n > 0 {
			i := c.byRank[r][n-1]
			c.byRank[r] = c.byRank[r][:n-1]
			c.res.Findings[i] = f
			c.byRank[rank] = append(c.byRank[rank], i)
			return
		}
	}
}

func (c *collector) toolError(msg string) {
	if len(c.res.ToolErrors) < maxToolErrors {
		c.res.ToolErrors = append(c.res.ToolErrors, clip(textclip.OneLine(msg, 0), 512))
	}
}

func (c *collector) notice(path, msg string) {
	if len(c.res.Notices) < maxNotices {
		c.res.Notices = append(c.res.Notices, Notice{Path: cleanPath(path, c.opts.Root), Text: clip(textclip.OneLine(msg, 0), 512)})
	}
}

func (c *collector) result() ReadResult {
	Sort(c.res.Findings)
	c.res.Findings = Dedupe(c.res.Findings)
	// Without the files, the message stands in for the flagged text; the gate
	// assigns them again with the snapshot's lines.
	AssignFingerprints(c.res.Findings, nil)
	return c.res
}

// cleanPath turns what an analyzer printed (a relative path, "./x", an
// absolute path under root, a file:// or relative URI) into a clean
// repository-relative path. Paths outside root are kept, cleaned, so that they
// match nothing in the diff.
func cleanPath(p, root string) string {
	if strings.HasPrefix(p, "file:") {
		if u, err := url.Parse(p); err == nil && u.Path != "" {
			p = u.Path
		}
	} else if strings.Contains(p, "%") {
		if u, err := url.PathUnescape(p); err == nil {
			p = u
		}
	}
	p = strings.ReplaceAll(p, `\`, "/")
	if strings.HasPrefix(p, "/") {
		root = strings.TrimSuffix(path.Clean(root), "/")
		if rel, ok := strings.CutPrefix(path.Clean(p), root+"/"); ok && root != "" {
			p = rel
		}
	}
	if p == "" {
		return ""
	}
	p = path.Clean(p)
	if p == "." {
		return ""
	}
	return clip(p, 4096)
}

// clip keeps at most n bytes of a tool's text, as valid UTF-8.
func clip(s string, n int) string {
	return strings.ToValidUTF8(textclip.Head(s, n, "…"), "\uFFFD")
}

// safeURL keeps only absolute http(s) links.
func safeURL(s string) bool {
	if s == "" || len(s) > 2048 {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// Merge joins the results of one tool's runs over parts of its files (a
// batch of files each, read one at a time) into one result, as if one run
// had printed them all: at most maxFindings findings (0: DefaultMaxFindings),
// the least severe dropped first and counted in Dropped with those each part
// dropped; tool errors and notices within the readers' caps; the runs' stats
// added up (peak memory and slowest file: the largest).
func Merge(maxFindings int, parts ...ReadResult) ReadResult {
	c := newCollector(ReadOptions{MaxFindings: maxFindings})
	for _, p := range parts {
		for _, f := range p.Findings {
			c.keep(f)
		}
		c.res.Dropped += p.Dropped
		c.res.Suppressed += p.Suppressed
		for _, e := range p.ToolErrors {
			if len(c.res.ToolErrors) < maxToolErrors {
				c.res.ToolErrors = append(c.res.ToolErrors, e)
			}
		}
		for _, n := range p.Notices {
			if len(c.res.Notices) < maxNotices {
				c.res.Notices = append(c.res.Notices, n)
			}
		}
		if s := p.Stats; s != nil {
			if c.res.Stats == nil {
				c.res.Stats = &RunStats{}
			}
			t := c.res.Stats
			t.Files += s.Files
			t.MS += s.MS
			t.CPUMS += s.CPUMS
			t.MaxRSSKB = max(t.MaxRSSKB, s.MaxRSSKB)
			if s.MaxFileMS > t.MaxFileMS {
				t.MaxFileMS, t.Slowest = s.MaxFileMS, s.Slowest
			}
		}
		c.res.Judged = mergeJudged(c.res.Judged, p.Judged)
	}
	return c.result()
}

// mergeJudged adds b's judged sites to a, within MaxJudged.
func mergeJudged(a, b Judged) Judged {
	if len(b) == 0 {
		return a
	}
	n := 0
	for _, lines := range a {
		for _, cats := range lines {
			n += len(cats)
		}
	}
	if a == nil {
		a = Judged{}
	}
	for path, lines := range b {
		for line, cats := range lines {
			for cat, byCall := range cats {
				if _, ok := a[path][line][cat]; ok {
					a[path][line][cat] = a[path][line][cat] || byCall
					continue
				}
				if n >= MaxJudged {
					return a
				}
				if a[path] == nil {
					a[path] = map[int]map[string]bool{}
				}
				if a[path][line] == nil {
					a[path][line] = map[string]bool{}
				}
				a[path][line][cat] = byCall
				n++
			}
		}
	}
	return a
}

package bench

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/gate"
)

// Expected is one vulnerability a person found by reading a corpus
// repository's code: what a reviewer is bought to find, on the line it is.
type Expected struct {
	// Path is repository-relative with forward slashes; Line is the first
	// line of the vulnerable statement (1-based, in the head revision), and
	// EndLine its last when it spans several (0: just Line).
	Path    string `json:"path"`
	Line    int    `json:"line"`
	EndLine int    `json:"end_line,omitempty"`
	// CWE is "CWE-89" and the like; What says what is wrong, in one line.
	CWE  string `json:"cwe"`
	What string `json:"what"`
}

// Injection reports whether e is an SQL, NoSQL, OS command or code injection:
// the classes the review target demands all of.
func (e Expected) Injection() bool { return injectionCWEs[e.CWE] }

// injectionCWEs are the CWEs the target counts as injections: command (77,
// 78), SQL (89), code (94, 95) and NoSQL (943).
var injectionCWEs = map[string]bool{"CWE-77": true, "CWE-78": true, "CWE-89": true, "CWE-94": true, "CWE-95": true, "CWE-943": true}

// last is the last line of e's statement.
func (e Expected) last() int { return max(e.Line, e.EndLine) }

// Location renders "path:line" or "path:line-end".
func (e Expected) Location() string {
	if e.EndLine > e.Line {
		return fmt.Sprintf("%s:%d-%d", e.Path, e.Line, e.EndLine)
	}
	return e.Path + ":" + strconv.Itoa(e.Line)
}

// Bounds of an expected-findings list, which is read from a file.
const (
	MaxExpectedBytes   = 1 << 20
	MaxExpected        = 1000
	maxExpectedWhat    = 300
	maxExpectedPath    = 1000
	maxExpectedSpan    = 50
	expectedFileSuffix = ".json"
)

var cwePattern = regexp.MustCompile(`^CWE-[1-9][0-9]{0,4}$`)

// ParseExpected reads an expected-findings list: a JSON array of Expected.
// Every entry must name a clean relative path, a line, a CWE and what is
// wrong; an entry may not be listed twice.
func ParseExpected(r io.Reader) ([]Expected, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxExpectedBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxExpectedBytes {
		return nil, fmt.Errorf("expected findings: over %d bytes", MaxExpectedBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var list []Expected
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("expected findings: %w", err)
	}
	if dec.More() {
		return nil, errors.New("expected findings: trailing data after the list")
	}
	if len(list) > MaxExpected {
		return nil, fmt.Errorf("expected findings: %d entries, at most %d", len(list), MaxExpected)
	}
	seen := map[string]bool{}
	for i, e := range list {
		bad := func(why string) error {
			return fmt.Errorf("expected findings: entry %d (%s): %s", i+1, e.Location(), why)
		}
		switch {
		case e.Path == "" || len(e.Path) > maxExpectedPath || strings.HasPrefix(e.Path, "/") || path.Clean(e.Path) != e.Path ||
			e.Path == ".." || strings.HasPrefix(e.Path, "../") || strings.ContainsAny(e.Path, "\\\x00\n"):
			return nil, bad("path must be clean, relative, with forward slashes")
		case e.Line < 1:
			return nil, bad("line must be 1 or more")
		case e.EndLine != 0 && (e.EndLine < e.Line || e.EndLine-e.Line > maxExpectedSpan):
			return nil, bad(fmt.Sprintf("end_line must be from line to line+%d", maxExpectedSpan))
		case !cwePattern.MatchString(e.CWE):
			return nil, bad(fmt.Sprintf("cwe %q is not CWE-<number>", e.CWE))
		case strings.TrimSpace(e.What) == "" || len(e.What) > maxExpectedWhat || strings.ContainsAny(e.What, "\n\r"):
			return nil, bad(fmt.Sprintf("what must be one line of 1 to %d bytes", maxExpectedWhat))
		}
		key := e.Location() + " " + e.CWE
		if seen[key] {
			return nil, bad("listed twice")
		}
		seen[key] = true
	}
	return list, nil
}

//go:embed expected/*.json
var expectedFS embed.FS

// ExpectedLists are the expected-findings lists kept in the repository
// (internal/bench/expected/NAME.json), one per corpus repository NAME.
func ExpectedLists() fs.FS {
	sub, err := fs.Sub(expectedFS, "expected")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// LoadExpected returns the list for repository name from fsys, and false
// when fsys has none.
func LoadExpected(fsys fs.FS, name string) ([]Expected, bool, error) {
	if fsys == nil {
		return nil, false, nil
	}
	f, err := fsys.Open(name + expectedFileSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	list, err := ParseExpected(f)
	if err != nil {
		return nil, false, fmt.Errorf("%s%s: %w", name, expectedFileSuffix, err)
	}
	return list, true, nil
}

// Recall is how an expected-findings list fared against a review.
type Recall struct {
	// Expected and Found count the list and the entries some reported
	// finding is on; Injections and InjectionsFound the same for injections.
	Expected        int `json:"expected"`
	Found           int `json:"found"`
	Injections      int `json:"injections"`
	InjectionsFound int `json:"injections_found"`
	// Missed are the entries no reported finding is on.
	Missed []Expected `json:"missed"`
	// Matches say which finding found which entry.
	Matches []Match `json:"matches"`
	// Unexpected counts reported findings that are on no expected entry:
	// noise, or a real problem the list lacks.
	Unexpected int `json:"unexpected"`
	// OffChange are entries whose line is not an added line of the change:
	// a wrong list (or a change that is not the one it was written for).
	// They count as expected and missed.
	OffChange []Expected `json:"off_change"`
}

// Match is one expected entry and the finding that found it.
type Match struct {
	Expected Expected `json:"expected"`
	Analyzer string   `json:"analyzer"`
	RuleID   string   `json:"rule_id"`
	Line     int      `json:"line"`
}

// Score matches findings against list. An entry is found when a reported
// finding in its file starts on one of its lines (Line to EndLine, no
// tolerance beyond). Findings not reported are ignored. ix, when set, is the
// change's diff: entries not on an added line of it are listed as OffChange.
func Score(list []Expected, findings []gate.Marked, ix *diff.Index) Recall {
	r := Recall{Expected: len(list), Missed: []Expected{}, Matches: []Match{}, OffChange: []Expected{}}
	used := make([]bool, len(findings))
	for _, e := range list {
		if e.Injection() {
			r.Injections++
		}
		if ix != nil {
			if l := ix.Line(e.Path, e.Line); l == nil || l.Kind != diff.Added {
				r.OffChange = append(r.OffChange, e)
			}
		}
		found := -1
		for i, m := range findings {
			if !m.Reported || m.Path != e.Path || m.StartLine < e.Line || m.StartLine > e.last() {
				continue
			}
			used[i] = true
			if found < 0 {
				found = i
			}
		}
		if found < 0 {
			r.Missed = append(r.Missed, e)
			continue
		}
		r.Found++
		if e.Injection() {
			r.InjectionsFound++
		}
		m := findings[found]
		r.Matches = append(r.Matches, Match{Expected: e, Analyzer: m.Analyzer, RuleID: m.RuleID, Line: m.StartLine})
	}
	for i, m := range findings {
		if m.Reported && !used[i] {
			r.Unexpected++
		}
	}
	slices.SortStableFunc(r.Missed, func(a, b Expected) int { return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line)) })
	return r
}

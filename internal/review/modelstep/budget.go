package modelstep

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/review"
)

// BudgetOptions size the model's view of a change.
type BudgetOptions struct {
	// ChunkTokens is what the diff (and its findings) may take in one call,
	// after the fixed part of the prompt.
	ChunkTokens int64
	// MaxChunks is N: a large change is split into at most N calls.
	MaxChunks int
}

// filePart is a file, or the hunks of it that fit, in one call.
type filePart struct {
	file *diff.File
	show []bool // nil: all hunks; else show[i] for hunk i
}

func (fp filePart) includes(h int) bool { return fp.show == nil || (h < len(fp.show) && fp.show[h]) }

func (fp filePart) shown() int {
	if fp.show == nil {
		return len(fp.file.Hunks)
	}
	n := 0
	for _, v := range fp.show {
		if v {
			n++
		}
	}
	return n
}

func (fp filePart) partial() bool { return fp.shown() < len(fp.file.Hunks) }

// fileClass orders files by how much a reviewer gains from them.
type fileClass int

const (
	classCode fileClass = iota
	classTest
	classConfig
	classDocs
)

func (c fileClass) String() string {
	return [...]string{"code", "test", "config", "docs"}[c]
}

// classifyPath guesses what a file is from its name.
func classifyPath(p string) fileClass {
	lower := strings.ToLower(p)
	base := path.Base(lower)
	ext := path.Ext(base)
	dirs := "/" + path.Dir(lower) + "/"
	switch {
	case ext == ".md" || ext == ".rst" || ext == ".txt" || ext == ".adoc" || strings.Contains(dirs, "/docs/") || strings.Contains(dirs, "/doc/") ||
		base == "license" || base == "changelog" || base == "authors":
		return classDocs
	case strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") ||
		strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") || strings.HasSuffix(base, "test.java") ||
		strings.Contains(dirs, "/test/") || strings.Contains(dirs, "/tests/") || strings.Contains(dirs, "/__tests__/") ||
		strings.Contains(dirs, "/testdata/") || strings.Contains(dirs, "/spec/"):
		return classTest
	case ext == ".json" || ext == ".yaml" || ext == ".yml" || ext == ".toml" || ext == ".ini" || ext == ".cfg" || ext == ".xml" ||
		ext == ".lock" || ext == ".csv" || ext == ".svg":
		return classConfig
	}
	return classCode
}

// costedFile is a file with its estimated prompt size and priority.
type costedFile struct {
	file     *diff.File
	tokens   int64
	hunks    []int64
	findings int
	class    fileClass
}

// budgetPlan is how a change is shown to the model.
type budgetPlan struct {
	chunks [][]filePart
	// omitted are files (or hunks) left out, with why.
	omitted []review.OmittedFile
}

// fileOverheadTokens estimates what a file costs besides its hunks: its
// data block markers (with the nonce), its FILE line and the partial note.
func fileOverheadTokens(f *diff.File) int64 {
	return int64(2*len(f.Path())+len(f.OldPath)+240) / 3
}

// findingTokens estimates one finding line in the prompt.
const findingTokens = (promptMaxFindingBytes + 80) / 3

// planBudget orders files (findings first, then code over tests over config
// over docs, then smaller before larger) and packs them first-fit into at
// most MaxChunks calls of ChunkTokens each. A file too large for any call
// gets the hunks that fit; everything left out is named with its reason.
func planBudget(files []*diff.File, findings []gate.Marked, o BudgetOptions) budgetPlan {
	perPath := map[string]int{}
	for _, f := range findings {
		if f.Reported {
			perPath[f.Path]++
		}
	}
	costed := make([]costedFile, 0, len(files))
	for _, f := range files {
		c := costedFile{file: f, findings: perPath[f.Path()], class: classifyPath(f.Path())}
		c.tokens = fileOverheadTokens(f) + int64(min(c.findings, promptMaxFindings))*findingTokens
		c.hunks = make([]int64, len(f.Hunks))
		for i := range f.Hunks {
			c.hunks[i] = hunkTokens(&f.Hunks[i])
			c.tokens += c.hunks[i]
		}
		costed = append(costed, c)
	}
	sort.SliceStable(costed, func(i, j int) bool {
		a, b := costed[i], costed[j]
		if (a.findings > 0) != (b.findings > 0) {
			return a.findings > 0
		}
		if a.findings != b.findings {
			return a.findings > b.findings
		}
		if a.class != b.class {
			return a.class < b.class
		}
		if a.tokens != b.tokens {
			return a.tokens < b.tokens
		}
		return a.file.Path() < b.file.Path()
	})

	var plan budgetPlan
	maxChunks := max(1, o.MaxChunks)
	capacity := o.ChunkTokens
	var used []int64
	for _, c := range costed {
		if len(c.file.Hunks) == 0 {
			plan.omitted = append(plan.omitted, review.OmittedFile{Path: c.file.Path(), Reason: "no text hunks to review"})
			continue
		}
		placed := false
		for i := range plan.chunks {
			if used[i]+c.tokens <= capacity {
				plan.chunks[i] = append(plan.chunks[i], filePart{file: c.file})
				used[i] += c.tokens
				placed = true
				break
			}
		}
		if !placed && len(plan.chunks) < maxChunks && c.tokens <= capacity {
			plan.chunks = append(plan.chunks, []filePart{{file: c.file}})
			used = append(used, c.tokens)
			placed = true
		}
		if placed {
			continue
		}
		// Too large for what is left: show the hunks that fit in the call
		// with the most room, if that is at least one hunk.
		best := -1
		if len(plan.chunks) < maxChunks {
			plan.chunks = append(plan.chunks, nil)
			used = append(used, 0)
			best = len(plan.chunks) - 1
		} else {
			for i := range used {
				if best < 0 || used[i] < used[best] {
					best = i
				}
			}
		}
		room := capacity - used[best] - fileOverheadTokens(c.file) - int64(min(c.findings, promptMaxFindings))*findingTokens
		show := make([]bool, len(c.hunks))
		var kept int64
		nkeep := 0
		for i, t := range c.hunks {
			if kept+t <= room {
				show[i] = true
				kept += t
				nkeep++
			}
		}
		if nkeep == 0 {
			if len(plan.chunks[best]) == 0 {
				plan.chunks = plan.chunks[:best]
				used = used[:best]
			}
			plan.omitted = append(plan.omitted, review.OmittedFile{Path: c.file.Path(), Reason: omitReason(c, capacity, maxChunks)})
			continue
		}
		plan.chunks[best] = append(plan.chunks[best], filePart{file: c.file, show: show})
		used[best] += capacity - used[best] - room + kept
		plan.omitted = append(plan.omitted, review.OmittedFile{Path: c.file.Path(),
			Reason: fmt.Sprintf("partly reviewed: %d of %d hunks shown, the rest (est. %d tokens) did not fit the token budget", nkeep, len(c.hunks), c.tokens-kept)})
	}
	return plan
}

func omitReason(c costedFile, capacity int64, chunks int) string {
	why := fmt.Sprintf("left out by the token budget: est. %d tokens, %d call(s) of %d tokens were taken by higher-priority files", c.tokens, chunks, capacity)
	if c.tokens > capacity {
		why = fmt.Sprintf("left out by the token budget: est. %d tokens, more than one call's %d, and no hunk fit", c.tokens, capacity)
	}
	return why + " (priority: " + priorityText(c) + ")"
}

func priorityText(c costedFile) string {
	if c.findings > 0 {
		return fmt.Sprintf("%s with %d finding(s)", c.class, c.findings)
	}
	return c.class.String()
}

// Package diff parses unified diffs (git's, with renames, copies, mode changes,
// binary markers and "\ No newline at end of file") and indexes them by new-side
// line number, so that findings and model comments can be placed on lines that
// the change really touches.
package diff

import "slices"

// LineKind says which side(s) of the diff a line belongs to.
type LineKind string

// The three kinds of lines in a hunk.
const (
	Context LineKind = "context" // on both sides, unchanged
	Added   LineKind = "added"   // only on the new side
	Deleted LineKind = "deleted" // only on the old side
)

// Line is one line of a hunk. OldLine is 0 for an added line and NewLine is 0
// for a deleted one.
type Line struct {
	Kind    LineKind `json:"kind"`
	OldLine int      `json:"old_line,omitempty"`
	NewLine int      `json:"new_line,omitempty"`
	// Content is the line without its diff marker and line terminator.
	Content string `json:"content"`
	// NoNewline is set on the last line of a side that has no newline at EOF.
	NoNewline bool `json:"no_newline,omitempty"`
}

// Hunk is one "@@ -a,b +c,d @@" section.
type Hunk struct {
	OldStart int    `json:"old_start"`
	OldLines int    `json:"old_lines"`
	NewStart int    `json:"new_start"`
	NewLines int    `json:"new_lines"`
	Section  string `json:"section,omitempty"` // the text after the second "@@"
	Lines    []Line `json:"lines"`
}

// Status is what happened to a file.
type Status string

// File statuses, as git names them.
const (
	StatusModified Status = "modified"
	StatusAdded    Status = "added"
	StatusDeleted  Status = "deleted"
	StatusRenamed  Status = "renamed"
	StatusCopied   Status = "copied"
)

// File is the diff of one file.
type File struct {
	// OldPath and NewPath are repository-relative, without the a/ and b/
	// prefixes; OldPath is empty for an added file and NewPath for a deleted one.
	OldPath string `json:"old_path,omitempty"`
	NewPath string `json:"new_path,omitempty"`
	Status  Status `json:"status"`
	// Binary is set when git reported "Binary files ... differ" or a binary patch.
	Binary     bool   `json:"binary,omitempty"`
	OldMode    string `json:"old_mode,omitempty"`
	NewMode    string `json:"new_mode,omitempty"`
	Similarity int    `json:"similarity,omitempty"` // percent, for renames and copies
	Hunks      []Hunk `json:"hunks"`
	// Truncated is set when the file's diff was longer than the parser's
	// per-file cap: the hunks past the cap are missing.
	Truncated bool `json:"truncated,omitempty"`
}

// Path is the file's name on the new side, or on the old side when it was deleted.
func (f *File) Path() string {
	if f.NewPath != "" {
		return f.NewPath
	}
	return f.OldPath
}

// AddedLines returns the new-side numbers of the added lines, ascending.
func (f *File) AddedLines() []int {
	var out []int
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			if l.Kind == Added {
				out = append(out, l.NewLine)
			}
		}
	}
	return out
}

// HunkLines returns the new-side numbers of every line inside a hunk (added
// and context lines), ascending.
func (f *File) HunkLines() []int {
	var out []int
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			if l.NewLine > 0 {
				out = append(out, l.NewLine)
			}
		}
	}
	return out
}

// SameHunk reports whether new-side lines a..b all lie in one hunk (a comment on a range
// of lines may not span two).
func (f *File) SameHunk(a, b int) bool {
	for _, h := range f.Hunks {
		if h.NewLines == 0 {
			continue
		}
		lo, hi := h.NewStart, h.NewStart+h.NewLines-1
		if a >= lo && b <= hi {
			return true
		}
	}
	return false
}

// Stats counts added and deleted lines.
func (f *File) Stats() (added, deleted int) {
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			switch l.Kind {
			case Added:
				added++
			case Deleted:
				deleted++
			}
		}
	}
	return added, deleted
}

// Index answers "where is new-side line N of file P in this diff" in constant
// time. Build it once per diff.
type Index struct {
	files map[string]*fileIndex
}

type fileIndex struct {
	file  *File
	lines map[int]*Line // new-side line → the diff line
}

// NewIndex indexes files by new-side path. Deleted files are indexed by their
// old path with no lines.
func NewIndex(files []*File) *Index {
	ix := &Index{files: make(map[string]*fileIndex, len(files))}
	for _, f := range files {
		fi := &fileIndex{file: f, lines: map[int]*Line{}}
		for hi := range f.Hunks {
			h := &f.Hunks[hi]
			for li := range h.Lines {
				if l := &h.Lines[li]; l.NewLine > 0 {
					fi.lines[l.NewLine] = l
				}
			}
		}
		ix.files[f.Path()] = fi
	}
	return ix
}

// File returns the diff of path, or nil when path is not in the diff.
func (ix *Index) File(path string) *File {
	if fi := ix.files[path]; fi != nil {
		return fi.file
	}
	return nil
}

// Line returns the diff line at new-side line n of path, or nil when that line
// is outside every hunk (or the file is not in the diff).
func (ix *Index) Line(path string, n int) *Line {
	if fi := ix.files[path]; fi != nil {
		return fi.lines[n]
	}
	return nil
}

// Paths returns the indexed paths, sorted.
func (ix *Index) Paths() []string {
	out := make([]string, 0, len(ix.files))
	for p := range ix.files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

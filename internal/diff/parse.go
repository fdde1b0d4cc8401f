package diff

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/textclip"
)

// ErrMalformed marks input that is not a unified diff the parser understands.
var ErrMalformed = errors.New("malformed diff")

// ErrTooLarge marks a diff over Options.MaxBytes or Options.MaxFiles. Parse
// returns it together with the files read before the cap.
var ErrTooLarge = errors.New("diff too large")

// Options caps what Parse reads. Zero fields take the defaults below.
type Options struct {
	// MaxBytes bounds the whole input.
	MaxBytes int64
	// MaxFiles bounds the number of files.
	MaxFiles int
	// MaxFileBytes bounds the hunk text kept per file; past it the file's
	// remaining lines are counted but not kept, and File.Truncated is set.
	MaxFileBytes int64
	// MaxLineBytes cuts a longer line's Content (the line is still counted).
	MaxLineBytes int
}

// Defaults for Options.
const (
	DefaultMaxBytes     = 256 << 20
	DefaultMaxFiles     = 100_000
	DefaultMaxFileBytes = 8 << 20
	DefaultMaxLineBytes = 64 << 10
)

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	return o
}

// Parse reads a unified diff with one or more files: the output of `git diff`
// (extended headers, renames, copies, mode changes, binary markers, quoted
// names) or of `diff -u`. Text before the first file header (a commit message,
// a mail header) is skipped. On ErrTooLarge the files parsed so far are
// returned with the error.
func Parse(r io.Reader, opts Options) ([]*File, error) {
	p := &parser{opts: opts.withDefaults()}
	p.lr = newLineReader(r, p.opts.MaxBytes, p.opts.MaxLineBytes)
	err := p.run()
	if err != nil && !errors.Is(err, ErrTooLarge) {
		return nil, err
	}
	return p.files, err
}

// ParseString is Parse over a string with default options.
func ParseString(s string) ([]*File, error) {
	return Parse(strings.NewReader(s), Options{})
}

type parser struct {
	opts  Options
	lr    *lineReader
	files []*File
	cur   *File
	// git is set while the current file came from a "diff --git" header.
	git       bool
	fileBytes int64
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrMalformed, p.lr.n, fmt.Sprintf(format, args...))
}

func (p *parser) run() error {
	for {
		line, err := p.lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(line, "diff --git "):
			if err := p.startGit(line); err != nil {
				return err
			}
		case strings.HasPrefix(line, "diff --cc ") || strings.HasPrefix(line, "diff --combined "):
			return p.errorf("combined (merge) diffs are not supported")
		case strings.HasPrefix(line, "--- ") && p.lr.peekPrefix("+++ "):
			if err := p.fileHeaders(line); err != nil {
				return err
			}
		case strings.HasPrefix(line, "@@ "):
			if p.cur == nil {
				return p.errorf("hunk before any file header")
			}
			if err := p.hunk(line); err != nil {
				return err
			}
		case p.cur != nil && p.git:
			if err := p.extended(line); err != nil {
				return err
			}
		default:
			// Preamble (commit message, mail headers) or trailer (format-patch
			// signature): not part of any file.
		}
	}
}

func (p *parser) add(f *File) error {
	if len(p.files) >= p.opts.MaxFiles {
		return fmt.Errorf("%w: more than %d files", ErrTooLarge, p.opts.MaxFiles)
	}
	p.files = append(p.files, f)
	p.cur = f
	p.fileBytes = 0
	return nil
}

// startGit begins a file at "diff --git a/X b/Y". The names here are only a
// fallback: rename/copy headers and the ---/+++ lines are unambiguous.
func (p *parser) startGit(line string) error {
	oldName, newName := splitGitHeader(strings.TrimPrefix(line, "diff --git "))
	p.git = true
	return p.add(&File{
		OldPath: stripPrefix(oldName, "a/"),
		NewPath: stripPrefix(newName, "b/"),
		Status:  StatusModified,
		Hunks:   []Hunk{},
	})
}

// extended reads one git extended header line of the current file.
func (p *parser) extended(line string) error {
	f := p.cur
	switch {
	case strings.HasPrefix(line, "new file mode "):
		f.Status = StatusAdded
		f.NewMode = strings.TrimPrefix(line, "new file mode ")
		f.OldPath = ""
	case strings.HasPrefix(line, "deleted file mode "):
		f.Status = StatusDeleted
		f.OldMode = strings.TrimPrefix(line, "deleted file mode ")
		f.NewPath = ""
	case strings.HasPrefix(line, "old mode "):
		f.OldMode = strings.TrimPrefix(line, "old mode ")
	case strings.HasPrefix(line, "new mode "):
		f.NewMode = strings.TrimPrefix(line, "new mode ")
	case strings.HasPrefix(line, "rename from "):
		f.Status = StatusRenamed
		f.OldPath = unquote(strings.TrimPrefix(line, "rename from "))
	case strings.HasPrefix(line, "rename to "):
		f.Status = StatusRenamed
		f.NewPath = unquote(strings.TrimPrefix(line, "rename to "))
	case strings.HasPrefix(line, "copy from "):
		f.Status = StatusCopied
		f.OldPath = unquote(strings.TrimPrefix(line, "copy from "))
	case strings.HasPrefix(line, "copy to "):
		f.Status = StatusCopied
		f.NewPath = unquote(strings.TrimPrefix(line, "copy to "))
	case strings.HasPrefix(line, "similarity index "), strings.HasPrefix(line, "dissimilarity index "):
		v := strings.TrimSuffix(line[strings.LastIndexByte(line, ' ')+1:], "%")
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= 100 {
			f.Similarity = n
		}
	case strings.HasPrefix(line, "index "):
		// "index abc..def 100644": the mode is the same on both sides.
		if fs := strings.Fields(line); len(fs) == 3 && f.OldMode == "" && f.NewMode == "" {
			if f.Status != StatusAdded {
				f.OldMode = fs[2]
			}
			if f.Status != StatusDeleted {
				f.NewMode = fs[2]
			}
		}
	case strings.HasPrefix(line, "Binary files ") && strings.HasSuffix(line, " differ"):
		f.Binary = true
	case line == "GIT binary patch":
		f.Binary = true
		return p.skipBinaryPatch()
	}
	return nil
}

// skipBinaryPatch skips the base85 body of a "GIT binary patch": one or two
// blocks ("literal N"/"delta N" then data lines), each ended by a blank line.
func (p *parser) skipBinaryPatch() error {
	for {
		if p.lr.peekPrefix("diff --git ") || p.lr.peekPrefix("@@ ") {
			return nil
		}
		_, err := p.lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// fileHeaders reads "--- old" and "+++ new".
func (p *parser) fileHeaders(oldLine string) error {
	newLine, err := p.lr.next()
	if err != nil {
		return p.errorf("missing +++ line")
	}
	oldName := headerName(strings.TrimPrefix(oldLine, "--- "))
	newName := headerName(strings.TrimPrefix(newLine, "+++ "))
	if !p.git || p.cur == nil || len(p.cur.Hunks) > 0 {
		// A plain unified diff, or a second ---/+++ pair after hunks: a new file.
		p.git = false
		if err := p.add(&File{Status: StatusModified, Hunks: []Hunk{}}); err != nil {
			return err
		}
	}
	f := p.cur
	switch {
	case oldName == "/dev/null" && newName == "/dev/null":
		return p.errorf("both sides are /dev/null")
	case oldName == "/dev/null":
		f.Status = StatusAdded
		f.OldPath = ""
		f.NewPath = stripPrefix(newName, "b/")
	case newName == "/dev/null":
		f.Status = StatusDeleted
		f.NewPath = ""
		f.OldPath = stripPrefix(oldName, "a/")
	default:
		if p.git || (strings.HasPrefix(oldName, "a/") && strings.HasPrefix(newName, "b/")) {
			oldName, newName = stripPrefix(oldName, "a/"), stripPrefix(newName, "b/")
		}
		f.OldPath, f.NewPath = oldName, newName
	}
	p.git = false // the extended header is over
	return nil
}

// hunk reads one hunk whose header is line.
func (p *parser) hunk(header string) error {
	h, err := parseHunkHeader(header)
	if err != nil {
		return p.errorf("%v", err)
	}
	f := p.cur
	p.git = false
	oldLeft, newLeft := h.OldLines, h.NewLines
	oldN, newN := h.OldStart, h.NewStart
	keep := !f.Truncated
	var last *Line
	for oldLeft > 0 || newLeft > 0 || p.lr.peekPrefix(`\`) {
		line, err := p.lr.next()
		if err == io.EOF {
			return p.errorf("hunk %q ends early (%d old and %d new lines missing)", header, oldLeft, newLeft)
		}
		if err != nil {
			return err
		}
		var l Line
		marker := byte(' ')
		if line != "" {
			marker = line[0]
		}
		switch marker {
		case ' ':
			if oldLeft == 0 || newLeft == 0 {
				return p.errorf("context line past the end of hunk %q", header)
			}
			l = Line{Kind: Context, OldLine: oldN, NewLine: newN}
			oldN++
			newN++
			oldLeft--
			newLeft--
		case '+':
			if newLeft == 0 {
				return p.errorf("added line past the end of hunk %q", header)
			}
			l = Line{Kind: Added, NewLine: newN}
			newN++
			newLeft--
		case '-':
			if oldLeft == 0 {
				return p.errorf("deleted line past the end of hunk %q", header)
			}
			l = Line{Kind: Deleted, OldLine: oldN}
			oldN++
			oldLeft--
		case '\\':
			if last != nil {
				last.NoNewline = true
			}
			continue
		default:
			return p.errorf("unexpected line inside hunk %q", header)
		}
		if line != "" {
			l.Content = line[1:]
		}
		if keep {
			p.fileBytes += int64(len(line)) + 1
			if p.fileBytes > p.opts.MaxFileBytes {
				keep = false
				f.Truncated = true
			}
		}
		if keep {
			h.Lines = append(h.Lines, l)
			last = &h.Lines[len(h.Lines)-1]
		} else {
			last = nil
		}
	}
	if len(h.Lines) > 0 || !f.Truncated {
		f.Hunks = append(f.Hunks, h)
	}
	return nil
}

// parseHunkHeader reads "@@ -l[,s] +l[,s] @@[ section]".
func parseHunkHeader(line string) (Hunk, error) {
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return Hunk{}, fmt.Errorf("bad hunk header %q", line)
	}
	oldRange, rest, ok := strings.Cut(rest, " +")
	if !ok {
		return Hunk{}, fmt.Errorf("bad hunk header %q", line)
	}
	newRange, section, ok := strings.Cut(rest, " @@")
	if !ok {
		return Hunk{}, fmt.Errorf("bad hunk header %q", line)
	}
	var h Hunk
	var err error
	if h.OldStart, h.OldLines, err = parseRange(oldRange); err != nil {
		return Hunk{}, fmt.Errorf("bad hunk header %q: %v", line, err)
	}
	if h.NewStart, h.NewLines, err = parseRange(newRange); err != nil {
		return Hunk{}, fmt.Errorf("bad hunk header %q: %v", line, err)
	}
	h.Section = strings.TrimPrefix(section, " ")
	h.Lines = []Line{}
	return h, nil
}

const maxLineNumber = 1 << 30

func parseRange(s string) (start, n int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err = strconv.Atoi(a)
	if err != nil || start < 0 || start > maxLineNumber {
		return 0, 0, fmt.Errorf("bad line number %q", a)
	}
	n = 1
	if hasCount {
		n, err = strconv.Atoi(b)
		if err != nil || n < 0 || n > maxLineNumber {
			return 0, 0, fmt.Errorf("bad line count %q", b)
		}
	}
	if n > 0 && start == 0 {
		return 0, 0, fmt.Errorf("range %q starts at line 0", s)
	}
	return start, n, nil
}

// headerName extracts the file name of a ---/+++ line: a C-quoted name, or the
// text up to the first tab (git adds a tab after names with spaces; diff -u
// puts a timestamp there).
func headerName(s string) string {
	if strings.HasPrefix(s, `"`) {
		name, _ := unquotePrefix(s)
		return name
	}
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	return s
}

// splitGitHeader splits the "a/X b/Y" of a diff --git line. Quoted names are
// unambiguous; unquoted names with spaces are only splittable when both sides
// are equal, which holds for every header git writes without rename lines.
func splitGitHeader(s string) (string, string) {
	if strings.HasPrefix(s, `"`) {
		first, rest := unquotePrefix(s)
		rest = strings.TrimPrefix(rest, " ")
		if strings.HasPrefix(rest, `"`) {
			second, _ := unquotePrefix(rest)
			return first, second
		}
		return first, rest
	}
	if i := strings.Index(s, ` "`); i >= 0 {
		second, _ := unquotePrefix(s[i+1:])
		return s[:i], second
	}
	// "a/N b/N": the halves have equal length apart from the prefixes.
	if len(s) >= 5 && (len(s)-1)%2 == 0 {
		half := (len(s) - 1) / 2
		if s[half] == ' ' && s[2:half] == s[half+3:] {
			return s[:half], s[half+1:]
		}
	}
	if i := strings.Index(s, " b/"); i >= 0 {
		return s[:i], s[i+1:]
	}
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, s
}

func stripPrefix(name, prefix string) string {
	if name == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(name, prefix)
}

func unquote(s string) string {
	if strings.HasPrefix(s, `"`) {
		name, _ := unquotePrefix(s)
		return name
	}
	return s
}

// unquotePrefix decodes the C-style quoted string at the start of s (as git
// writes names with special characters) and returns it and the rest of s.
func unquotePrefix(s string) (string, string) {
	var b strings.Builder
	i := 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), s[i+1:]
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'v':
				b.WriteByte('\v')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case '0', '1', '2', '3':
				if i+2 < len(s) {
					if v, err := strconv.ParseUint(s[i:i+3], 8, 8); err == nil {
						b.WriteByte(byte(v))
						i += 2
						break
					}
				}
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String(), ""
}

// lineReader yields lines without their terminator ("\n" or "\r\n"), cutting
// each to maxLine bytes and failing with ErrTooLarge past maxBytes in total.
type lineReader struct {
	r        *bufio.Reader
	n        int // number of the line last returned, from 1
	read     int64
	maxBytes int64
	maxLine  int
	peeked   *peek
}

type peek struct {
	line string
	err  error
}

func newLineReader(r io.Reader, maxBytes int64, maxLine int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), maxBytes: maxBytes, maxLine: maxLine}
}

func (lr *lineReader) next() (string, error) {
	if pk := lr.peeked; pk != nil {
		lr.peeked = nil
		if pk.err == nil {
			lr.n++
		}
		return pk.line, pk.err
	}
	line, err := lr.read1()
	if err == nil {
		lr.n++
	}
	return line, err
}

// peekPrefix reports whether the next line starts with prefix.
func (lr *lineReader) peekPrefix(prefix string) bool {
	if lr.peeked == nil {
		line, err := lr.read1()
		lr.peeked = &peek{line: line, err: err}
	}
	return lr.peeked.err == nil && strings.HasPrefix(lr.peeked.line, prefix)
}

func (lr *lineReader) read1() (string, error) {
	var buf []byte
	sawAny := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.read += int64(len(chunk))
		if lr.read > lr.maxBytes {
			return "", fmt.Errorf("%w: more than %d bytes", ErrTooLarge, lr.maxBytes)
		}
		if len(chunk) > 0 {
			sawAny = true
			if room := lr.maxLine + 2 - len(buf); room > 0 {
				buf = append(buf, chunk[:min(room, len(chunk))]...)
			}
		}
		switch {
		case err == nil:
			return trimEOL(buf, lr.maxLine), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			if !sawAny {
				return "", io.EOF
			}
			return trimEOL(buf, lr.maxLine), nil
		default:
			return "", fmt.Errorf("read diff: %w", err)
		}
	}
}

// trimEOL drops the line ending and cuts the line to maxLine bytes on a
// character boundary, so a cut line's Content stays valid UTF-8 where the
// line was.
func trimEOL(b []byte, maxLine int) string {
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	return textclip.Head(string(b), maxLine, "")
}

package sandboxapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// A JSON job body carries its files' contents and stdin as JSON strings, as
// large as the body. Decoded with encoding/json alone, each was held about
// four times over (the decoder's buffer, the string, the bytes, the packed
// archive): three 60 MB bodies peaked at 714 MB (issue 35, item 6).
//
// jsonExtractor sits between the body and encoding/json: it follows the
// JSON's structure as it streams through, and the string that is a file's
// content (files.NAME, or files.NAME.content) or stdin is decoded straight
// into a temporary file, exactly as encoding/json would decode it, while
// encoding/json is given "" in its place. Everything else passes through
// unchanged, so encoding/json still decodes the request and refuses what it
// refused, with the same messages (a syntax error's offset is mapped back to
// the body's). What it is given is bounded by maxSpecJSONBytes.

// maxSpecJSONBytes bounds a JSON job body without its files' contents and
// stdin: argv, env, limits and the files' names.
const maxSpecJSONBytes = 4 << 20

// errSpecTooLarge is the refusal of a body past maxSpecJSONBytes.
var errSpecTooLarge = fmt.Errorf("%w: the request's JSON without its files' contents and stdin is over %s (send large inputs as files, or a snapshot)",
	sandbox.ErrTooLarge, units.FormatBytes(maxSpecJSONBytes))

// maxKeyBytes bounds a key the extractor reads to match; a longer one is
// passed on and matches nothing (no file name is that long).
const maxKeyBytes = 64 << 10

// maxDepth bounds the nesting the extractor follows (encoding/json refuses
// deeper); past it the rest passes through as it is.
const maxDepth = 10_000

// region is an extracted string in a scratch file.
type region struct {
	off, n int64
}

// what a value is, for the extractor, by where it stands.
type valueRole uint8

const (
	vOther   valueRole = iota
	vTop               // the body itself
	vFiles             // the value of the top-level "files"
	vFile              // the value of files.NAME
	vContent           // the value of files.NAME.content
	vStdin             // the value of the top-level "stdin"
)

// frameRole is what an object or array is.
type frameRole uint8

const (
	fOther frameRole = iota
	fTop
	fFiles
	fFile
)

type frame struct {
	array bool
	role  frameRole
	name  string // fFile: the file's name
}

type extractMode uint8

const (
	mTop        extractMode = iota // before the body's value
	mValue                         // before a value
	mValueOrEnd                    // after '[': a value or ']'
	mKeyOrEnd                      // after '{': a key or '}'
	mKey                           // after ',' in an object
	mInKey                         // inside a key
	mColon                         // after a key
	mAfter                         // after a value: ',' or the container's end
	mInString                      // inside a string passed on
	mLiteral                       // inside a number, true, false or null
	mExtract                       // inside an extracted string
	mPass                          // the rest passes through as it is
)

// shift says that from downstream offset down on, a body offset is down+delta.
type shift struct{ down, delta int64 }

// jsonExtractor is an io.Reader of the JSON it is given with the contents
// taken out.
type jsonExtractor struct {
	src    io.Reader
	in     []byte
	ip, ie int
	srcPos int64 // body offset of in[ip]
	srcErr error

	out     []byte
	op      int
	emitted int64
	shifts  []shift
	err     error // once out is drained

	mode    extractMode
	stack   []frame
	role    valueRole // of the value expected in mode mValue
	key     []byte
	keyLong bool
	lastKey string
	keyOK   bool
	esc     bool // mInString: after a backslash

	ext      extraction
	tempDir  string
	grow     func(int64) error
	contents *scratch // the files' contents
	stdinSc  *scratch // stdin
	files    map[string]*region
	stdin    *region
	failed   error // an error of the extractor's own (disk, budget, size)
}

func newJSONExtractor(src io.Reader, tempDir string, grow func(int64) error) *jsonExtractor {
	return &jsonExtractor{src: src, in: make([]byte, 64<<10), tempDir: tempDir, grow: grow, files: map[string]*region{}}
}

// Read implements io.Reader for encoding/json.
func (x *jsonExtractor) Read(p []byte) (int, error) {
	for x.op == len(x.out) {
		x.out, x.op = x.out[:0], 0
		if x.err != nil {
			return 0, x.err
		}
		if x.ip == x.ie {
			if x.srcErr != nil {
				x.atEOF()
				x.err = x.srcErr
				continue
			}
			n, err := x.src.Read(x.in)
			x.ip, x.ie, x.srcErr = 0, n, err
			if n == 0 && err == nil {
				continue
			}
		}
		x.step()
		if x.emitted > maxSpecJSONBytes && x.err == nil {
			x.fail(errSpecTooLarge)
		}
	}
	n := copy(p, x.out[x.op:])
	x.op += n
	return n, nil
}

// fail stops the extraction with an error of its own.
func (x *jsonExtractor) fail(err error) {
	if x.failed == nil {
		x.failed = err
	}
	x.err = err
	x.ip = x.ie
}

func (x *jsonExtractor) emit(b ...byte) {
	x.out = append(x.out, b...)
	x.emitted += int64(len(b))
}

// offset maps an offset of what encoding/json read to the body's.
func (x *jsonExtractor) offset(down int64) int64 {
	i := sort.Search(len(x.shifts), func(i int) bool { return x.shifts[i].down > down })
	if i == 0 {
		return down
	}
	return down + x.shifts[i-1].delta
}

func (x *jsonExtractor) addShift(down, removed int64) {
	delta := removed
	if n := len(x.shifts); n > 0 {
		delta += x.shifts[n-1].delta
	}
	x.shifts = append(x.shifts, shift{down, delta})
}

// step processes the input at hand, up to a bounded amount of output.
func (x *jsonExtractor) step() {
	for x.ip < x.ie && len(x.out) < 32<<10 && x.err == nil {
		switch x.mode {
		case mPass:
			x.emit(x.in[x.ip:x.ie]...)
			x.srcPos += int64(x.ie - x.ip)
			x.ip = x.ie
		case mExtract:
			x.extractRun()
		case mInString, mInKey:
			x.stringRun()
		default:
			c := x.in[x.ip]
			if x.structural(c) {
				x.emit(c)
				x.ip++
				x.srcPos++
			}
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// structural handles one byte outside strings; false means the byte is not
// consumed (mode changed to handle it).
func (x *jsonExtractor) structural(c byte) bool {
	switch x.mode {
	case mTop, mValue, mValueOrEnd:
		if isSpace(c) {
			return true
		}
		if x.mode == mValueOrEnd && c == ']' {
			return x.closeContainer(true)
		}
		role := x.role
		if x.mode == mTop {
			role = vTop
		}
		return x.startValue(c, role)
	case mKeyOrEnd, mKey:
		switch {
		case isSpace(c):
		case c == '"':
			x.mode, x.key, x.keyLong, x.esc = mInKey, x.key[:0], false, false
		case c == '}' && x.mode == mKeyOrEnd:
			return x.closeContainer(false)
		default:
			x.mode = mPass
			return false
		}
		return true
	case mColon:
		switch {
		case isSpace(c):
		case c == ':':
			x.mode, x.role = mValue, x.roleOfValue()
		default:
			x.mode = mPass
			return false
		}
		return true
	case mAfter:
		if isSpace(c) {
			return true
		}
		if len(x.stack) == 0 {
			x.mode = mPass
			return false
		}
		top := x.stack[len(x.stack)-1]
		switch {
		case c == ',' && top.array:
			x.mode, x.role = mValue, vOther
		case c == ',':
			x.mode = mKey
		case c == ']' && top.array, c == '}' && !top.array:
			return x.closeContainer(top.array)
		default:
			x.mode = mPass
			return false
		}
		return true
	case mLiteral:
		if isSpace(c) || c == ',' || c == '}' || c == ']' {
			x.mode = mAfter
			return false
		}
		return true
	}
	x.mode = mPass
	return false
}

// startValue begins a value of the given role at c.
func (x *jsonExtractor) startValue(c byte, role valueRole) bool {
	switch c {
	case '{', '[':
		if len(x.stack) >= maxDepth {
			x.mode = mPass
			return false
		}
		f := frame{array: c == '['}
		if !f.array {
			switch role {
			case vTop:
				f.role = fTop
			case vFiles:
				f.role = fFiles
			case vFile:
				f.role, f.name = fFile, x.lastKey
			}
		}
		x.stack = append(x.stack, f)
		if f.array {
			x.mode, x.role = mValueOrEnd, vOther
		} else {
			x.mode = mKeyOrEnd
		}
		return true
	case '"':
		switch role {
		case vStdin:
			return x.startExtract(true, "")
		case vFile:
			return x.startExtract(false, x.lastKey)
		case vContent:
			return x.startExtract(false, x.stack[len(x.stack)-1].name)
		}
		x.mode, x.esc = mInString, false
		return true
	}
	if role == vTop {
		x.mode = mPass
		return false
	}
	x.mode = mLiteral
	return true
}

// closeContainer ends the innermost object or array at its closing byte.
func (x *jsonExtractor) closeContainer(array bool) bool {
	if len(x.stack) == 0 || x.stack[len(x.stack)-1].array != array {
		x.mode = mPass
		return false
	}
	x.stack = x.stack[:len(x.stack)-1]
	x.mode = mAfter
	return true
}

// roleOfValue is the role of the value after the key just read. A file's
// entry forgets any content an earlier entry of the same name gave it: the
// last one decides, as encoding/json's does.
func (x *jsonExtractor) roleOfValue() valueRole {
	top := x.stack[len(x.stack)-1]
	switch top.role {
	case fTop:
		switch {
		case !x.keyOK:
		case strings.EqualFold(x.lastKey, "files"):
			return vFiles
		case strings.EqualFold(x.lastKey, "stdin"):
			return vStdin
		}
	case fFiles:
		// A name too long to read is not extracted: its content stays
		// with encoding/json (and under maxSpecJSONBytes).
		if x.keyOK {
			delete(x.files, x.lastKey)
			return vFile
		}
	case fFile:
		if x.keyOK && x.lastKey == "content" {
			return vContent
		}
	}
	return vOther
}

// stringRun passes on a string (a value, or a key, which is also read).
func (x *jsonExtractor) stringRun() {
	start := x.ip
	for x.ip < x.ie {
		c := x.in[x.ip]
		x.ip++
		if x.esc {
			x.esc = false
			continue
		}
		if c == '\\' {
			x.esc = true
			continue
		}
		if c == '"' {
			run := x.in[start:x.ip]
			x.emit(run...)
			x.srcPos += int64(len(run))
			if x.mode == mInKey {
				x.endKey(run[:len(run)-1])
				x.mode = mColon
			} else {
				x.mode = mAfter
			}
			return
		}
	}
	run := x.in[start:x.ip]
	x.emit(run...)
	x.srcPos += int64(len(run))
	if x.mode == mInKey {
		x.addKey(run)
	}
}

func (x *jsonExtractor) addKey(b []byte) {
	if len(x.key)+len(b) > maxKeyBytes {
		x.keyLong = true
		return
	}
	x.key = append(x.key, b...)
}

// endKey decodes the key read (its last part is b) as encoding/json does.
func (x *jsonExtractor) endKey(b []byte) {
	x.addKey(b)
	x.keyOK = false
	if x.keyLong {
		return
	}
	q := make([]byte, 0, len(x.key)+2)
	q = append(append(append(q, '"'), x.key...), '"')
	if err := json.Unmarshal(q, &x.lastKey); err == nil {
		x.keyOK = true
	}
}

// extraction is the string being extracted.
type extraction struct {
	sc        *scratch
	target    *region
	stdin     bool
	name      string
	srcStart  int64 // body offset of its opening quote
	downStart int64 // downstream offset where "" goes

	esc      int // 0: none; 1: after '\'; 2-5: hex digits of \u read + 2
	hex      rune
	raw      [6]byte // the escape so far, for an error
	rawN     int
	rawStart int64
	surr     rune // a surrogate waiting for its pair
	u8       [utf8.UTFMax]byte
	u8n      int
	runeBuf  [utf8.UTFMax]byte
}

func (x *jsonExtractor) startExtract(stdin bool, name string) bool {
	sc := x.contents
	if stdin {
		sc = x.stdinSc
	}
	if sc == nil {
		var err error
		if sc, err = newScratch(x.tempDir, x.grow); err != nil {
			x.fail(err)
			return false
		}
		if stdin {
			x.stdinSc = sc
		} else {
			x.contents = sc
		}
	}
	x.ext = extraction{sc: sc, stdin: stdin, name: name, target: &region{off: sc.n},
		srcStart: x.srcPos, downStart: x.emitted}
	x.mode = mExtract
	x.ip++ // the opening quote, emitted at the end
	x.srcPos++
	return false
}

// extractRun decodes what it can of the extracted string.
func (x *jsonExtractor) extractRun() {
	e := &x.ext
	for x.ip < x.ie && x.mode == mExtract && x.err == nil {
		if e.esc == 0 && e.surr == 0 && e.u8n == 0 {
			// The common case: a run of plain ASCII.
			j := x.ip
			for j < x.ie {
				c := x.in[j]
				if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
					break
				}
				j++
			}
			if j > x.ip {
				x.write(x.in[x.ip:j])
				x.srcPos += int64(j - x.ip)
				x.ip = j
				continue
			}
		}
		c := x.in[x.ip]
		x.ip++
		x.srcPos++
		x.extractByte(c)
	}
}

// extractByte decodes one byte of an extracted string as encoding/json's
// unquote does: escapes, surrogate pairs (a lone surrogate becomes U+FFFD),
// and each byte of invalid UTF-8 becomes U+FFFD.
func (x *jsonExtractor) extractByte(c byte) {
	e := &x.ext
	at := x.srcPos - 1
	switch e.esc {
	case 0:
		switch {
		case c == '"':
			x.flushUTF8()
			x.flushSurrogate()
			x.endExtract(at)
		case c == '\\':
			x.flushUTF8()
			e.esc, e.rawN, e.rawStart = 1, 0, at
			e.raw[e.rawN] = c
			e.rawN++
		case c < 0x20:
			x.badString(at, []byte{c})
		case c < utf8.RuneSelf:
			x.flushUTF8()
			x.flushSurrogate()
			x.write([]byte{c})
		default:
			x.flushSurrogate()
			e.u8[e.u8n] = c
			e.u8n++
			for e.u8n > 0 && utf8.FullRune(e.u8[:e.u8n]) {
				x.decodeUTF8()
			}
		}
	case 1:
		e.raw[e.rawN] = c
		e.rawN++
		var b byte
		switch c {
		case '"', '\\', '/':
			b = c
		case 'b':
			b = '\b'
		case 'f':
			b = '\f'
		case 'n':
			b = '\n'
		case 'r':
			b = '\r'
		case 't':
			b = '\t'
		case 'u':
			e.esc, e.hex = 2, 0
			return
		default:
			x.badString(e.rawStart, e.raw[:e.rawN])
			return
		}
		x.flushSurrogate()
		x.write([]byte{b})
		e.esc = 0
	default:
		e.raw[e.rawN] = c
		e.rawN++
		var h rune
		switch {
		case '0' <= c && c <= '9':
			h = rune(c - '0')
		case 'a' <= c && c <= 'f':
			h = rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			h = rune(c - 'A' + 10)
		default:
			x.badString(e.rawStart, e.raw[:e.rawN])
			return
		}
		e.hex = e.hex<<4 | h
		if e.esc++; e.esc == 6 {
			e.esc = 0
			x.escapedRune(e.hex)
		}
	}
}

// escapedRune writes a \u escape's rune, pairing surrogates.
func (x *jsonExtractor) escapedRune(r rune) {
	e := &x.ext
	if e.surr != 0 {
		p := e.surr
		e.surr = 0
		if d := utf16.DecodeRune(p, r); d != unicode.ReplacementChar {
			x.writeRune(d)
			return
		}
		x.writeRune(unicode.ReplacementChar)
	}
	if utf16.IsSurrogate(r) {
		e.surr = r
		return
	}
	x.writeRune(r)
}

func (x *jsonExtractor) flushSurrogate() {
	if x.ext.surr != 0 {
		x.ext.surr = 0
		x.writeRune(unicode.ReplacementChar)
	}
}

// decodeUTF8 writes the first rune of the pending bytes, or U+FFFD for
// their first byte if they do not start one.
func (x *jsonExtractor) decodeUTF8() {
	e := &x.ext
	r, size := utf8.DecodeRune(e.u8[:e.u8n])
	if r == utf8.RuneError && size == 1 {
		x.writeRune(unicode.ReplacementChar)
	} else {
		x.write(e.u8[:size])
	}
	copy(e.u8[:], e.u8[size:e.u8n])
	e.u8n -= size
}

func (x *jsonExtractor) flushUTF8() {
	for x.ext.u8n > 0 {
		x.decodeUTF8()
	}
}

func (x *jsonExtractor) writeRune(r rune) {
	n := utf8.EncodeRune(x.ext.runeBuf[:], r)
	x.write(x.ext.runeBuf[:n])
}

func (x *jsonExtractor) write(b []byte) {
	if _, err := x.ext.sc.Write(b); err != nil {
		x.fail(err)
	}
}

// endExtract ends an extracted string at its closing quote (body offset
// at): it is recorded, and encoding/json reads "" in its place.
func (x *jsonExtractor) endExtract(at int64) {
	e := &x.ext
	e.target.n = e.sc.n - e.target.off
	if e.stdin {
		x.stdin = e.target
	} else {
		x.files[e.name] = e.target
	}
	x.emit('"', '"')
	x.addShift(e.downStart+2, at+1-e.srcStart-2)
	x.mode = mAfter
}

// badString gives encoding/json the string's opening quote followed by
// the bytes of its error (from body offset at), so that it refuses the
// body with its own message, at the same place once mapped.
func (x *jsonExtractor) badString(at int64, errBytes []byte) {
	e := &x.ext
	x.emit('"')
	x.addShift(e.downStart+1, at-e.srcStart-1)
	x.emit(errBytes...)
	x.mode = mPass
}

// atEOF ends the input: an extracted string cut short is given to
// encoding/json as cut, so that it says the body ends early.
func (x *jsonExtractor) atEOF() {
	if x.mode == mExtract {
		x.emit('"')
		if x.ext.esc > 0 {
			x.emit(x.ext.raw[:x.ext.rawN]...)
		}
		x.mode = mPass
	}
}

// flush writes what the scratch files buffer.
func (x *jsonExtractor) flush() error {
	for _, sc := range []*scratch{x.contents, x.stdinSc} {
		if err := sc.flush(); err != nil {
			return err
		}
	}
	return nil
}

// close releases the scratch files.
func (x *jsonExtractor) close() {
	x.contents.Close()
	x.stdinSc.Close()
}

// scratch is an unlinked temporary file the extracted strings are written
// to, each a region of it; every byte is asked of grow (the spool budget)
// before it is written.
type scratch struct {
	f *os.File
	w *bufio.Writer
	n int64
}

type growWriter struct {
	f    *os.File
	grow func(int64) error
}

func (g growWriter) Write(p []byte) (int, error) {
	if g.grow != nil {
		if err := g.grow(int64(len(p))); err != nil {
			return 0, err
		}
	}
	return g.f.Write(p)
}

func newScratch(dir string, grow func(int64) error) (*scratch, error) {
	f, err := os.CreateTemp(dir, "aster-json-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("spool a JSON body: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("spool a JSON body: %w", err)
	}
	return &scratch{f: f, w: bufio.NewWriterSize(growWriter{f, grow}, 64<<10)}, nil
}

func (s *scratch) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.n += int64(n)
	return n, err
}

func (s *scratch) flush() error {
	if s == nil {
		return nil
	}
	return s.w.Flush()
}

// section reads a region (after flush).
func (s *scratch) section(r region) *io.SectionReader {
	return io.NewSectionReader(s.f, r.off, r.n)
}

// head returns the first two bytes of a region.
func (s *scratch) head(r region) []byte {
	b := make([]byte, min(r.n, 2))
	n, _ := s.f.ReadAt(b, r.off)
	return b[:n]
}

// Close releases the file; a nil scratch is closed already.
func (s *scratch) Close() error {
	if s == nil || s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// Package evidence checks a model's claim by running it: the model attaches
// to a comment a few files and a command that should fail (or pass) if the
// claim is true; Engine runs them in a fresh sandbox over the change's head
// (and, for a failing claim, its base) through the test phase's install and
// cache, and decides from exit statuses alone whether the claim is
// confirmed, refuted or inconclusive. What the evidence prints never
// changes the verdict. Everything here is untrusted model output: it is
// validated (Parse) before anything runs.
package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Expect is what the evidence's command should do if the claim is true.
type Expect string

// Expectations.
const (
	ExpectFail Expect = "fail"
	ExpectPass Expect = "pass"
)

// Evidence is a model's test of its own claim: Files are written over the
// head snapshot, then Argv runs in /work.
type Evidence struct {
	Files  map[string]string `json:"files"`
	Argv   []string          `json:"argv"`
	Expect Expect            `json:"expect"`
}

// Caps on one evidence. A claim's test is a file or two and one command.
const (
	MaxFiles      = 8
	MaxFileBytes  = 64 << 10
	MaxTotalBytes = 128 << 10
	MaxPathBytes  = 256
	MaxArgs       = 64
	MaxArgBytes   = 4 << 10
	MaxArgvBytes  = 16 << 10
)

// ErrInvalid marks evidence that failed validation; nothing of it runs.
var ErrInvalid = errors.New("invalid evidence")

// protectedNames are files evidence may never write, at any depth and in
// any letter case: the repository's and the operator's Aster configuration.
var protectedNames = []string{".aster.yml", ".aster.yaml", "aster.yaml", "aster.yml"}

// protectedDirs are top-level directories evidence may never write into:
// the VCS directory and the one the install phase uses for its own files.
var protectedDirs = []string{".git", ".aster"}

// Parse reads evidence from JSON (an object, or null for none).
func Parse(data []byte) (*Evidence, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: not JSON", ErrInvalid)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrInvalid)
	}
	return FromJSON(v)
}

// FromJSON reads evidence from a generically decoded JSON value (nil: no
// evidence). Files may be an object {path: content} or, as the strict
// schema asks for it, an array of {"path", "content"}.
func FromJSON(v any) (*Evidence, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: not an object", ErrInvalid)
	}
	for k := range m {
		if k != "files" && k != "argv" && k != "expect" {
			return nil, fmt.Errorf("%w: unknown field %q", ErrInvalid, clip(k, 40))
		}
	}
	ev := &Evidence{Files: map[string]string{}}
	switch fs := m["files"].(type) {
	case nil:
	case map[string]any:
		if len(fs) > MaxFiles {
			return nil, fmt.Errorf("%w: %d files, more than %d", ErrInvalid, len(fs), MaxFiles)
		}
		for p, c := range fs {
			s, ok := c.(string)
			if !ok {
				return nil, fmt.Errorf("%w: the content of %q is not a string", ErrInvalid, clip(p, 80))
			}
			ev.Files[p] = s
		}
	case []any:
		if len(fs) > MaxFiles {
			return nil, fmt.Errorf("%w: %d files, more than %d", ErrInvalid, len(fs), MaxFiles)
		}
		for _, e := range fs {
			f, ok := e.(map[string]any)
			p, okP := f["path"].(string)
			c, okC := f["content"].(string)
			if !ok || !okP || !okC || len(f) != 2 {
				return nil, fmt.Errorf(`%w: each file must be {"path": "...", "content": "..."}`, ErrInvalid)
			}
			if _, dup := ev.Files[p]; dup {
				return nil, fmt.Errorf("%w: %q is given twice", ErrInvalid, clip(p, 80))
			}
			ev.Files[p] = c
		}
	default:
		return nil, fmt.Errorf("%w: files is not an object", ErrInvalid)
	}
	argv, ok := m["argv"].([]any)
	if !ok {
		return nil, fmt.Errorf("%w: argv is not an array of strings", ErrInvalid)
	}
	if len(argv) > MaxArgs {
		return nil, fmt.Errorf("%w: argv has %d entries, more than %d", ErrInvalid, len(argv), MaxArgs)
	}
	for _, a := range argv {
		s, ok := a.(string)
		if !ok {
			return nil, fmt.Errorf("%w: argv is not an array of strings", ErrInvalid)
		}
		ev.Argv = append(ev.Argv, s)
	}
	exp, _ := m["expect"].(string)
	ev.Expect = Expect(exp)
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	return ev, nil
}

// Validate checks every cap and path rule.
func (ev *Evidence) Validate() error {
	if ev.Expect != ExpectFail && ev.Expect != ExpectPass {
		return fmt.Errorf(`%w: expect must be "fail" or "pass"`, ErrInvalid)
	}
	if err := CheckArgv(ev.Argv); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(ev.Files) > MaxFiles {
		return fmt.Errorf("%w: %d files, more than %d", ErrInvalid, len(ev.Files), MaxFiles)
	}
	total := 0
	for _, p := range ev.Paths() {
		if err := checkPath(p); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		n := len(ev.Files[p])
		if n > MaxFileBytes {
			return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalid, p, n, MaxFileBytes)
		}
		total += n
	}
	if total > MaxTotalBytes {
		return fmt.Errorf("%w: the files are %d bytes, more than %d", ErrInvalid, total, MaxTotalBytes)
	}
	return nil
}

// Paths returns the file names, sorted.
func (ev *Evidence) Paths() []string {
	out := make([]string, 0, len(ev.Files))
	for p := range ev.Files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// CheckArgv checks a model-chosen command against the argv caps (the
// agentic tools use it too).
func CheckArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("argv is empty")
	}
	if len(argv) > MaxArgs {
		return fmt.Errorf("argv has %d entries, more than %d", len(argv), MaxArgs)
	}
	total := 0
	for _, s := range argv {
		if len(s) > MaxArgBytes || strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
			return fmt.Errorf("an argument is longer than %d bytes, holds a NUL or is not UTF-8", MaxArgBytes)
		}
		total += len(s)
	}
	if total > MaxArgvBytes {
		return fmt.Errorf("argv is %d bytes, more than %d", total, MaxArgvBytes)
	}
	return nil
}

// checkPath accepts a clean relative path inside the workspace that names
// no protected file.
func checkPath(p string) error {
	q := clip(p, 80)
	switch {
	case p == "" || len(p) > MaxPathBytes:
		return fmt.Errorf("file path %q is empty or longer than %d bytes", q, MaxPathBytes)
	case !utf8.ValidString(p) || strings.ContainsFunc(p, func(r rune) bool { return unicode.IsControl(r) || r == '\\' }):
		return fmt.Errorf("file path %q holds a control character or a backslash", q)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("file path %q is absolute; paths are relative to the repository", q)
	case path.Clean(p) != p:
		return fmt.Errorf("file path %q is not clean (., .., // or a trailing /)", q)
	}
	parts := strings.Split(p, "/")
	if slices.Contains(parts, "..") {
		return fmt.Errorf("file path %q leaves the repository", q)
	}
	for _, d := range protectedDirs {
		if strings.EqualFold(parts[0], d) {
			return fmt.Errorf("file path %q is under %s/, which evidence may not write", q, d)
		}
	}
	base := parts[len(parts)-1]
	for _, n := range protectedNames {
		if strings.EqualFold(base, n) {
			return fmt.Errorf("file path %q is Aster's configuration, which evidence may not write", q)
		}
	}
	return nil
}

func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

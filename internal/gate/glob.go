package gate

import (
	"fmt"
	"path"
	"strings"
)

// Glob is a path pattern as .aster.yml writes them, close to .gitignore:
//   - "*" and "?" and "[a-z]" match within one path segment, "**" matches any
//     number of segments (including none);
//   - a pattern with no "/" matches the file name at any depth ("*.py");
//   - a trailing "/" matches everything below a directory ("vendor/");
//   - a leading "/" anchors at the repository root (the default for
//     patterns that contain a "/").
type Glob struct {
	raw  string
	segs []string
}

// MaxGlobBytes bounds one pattern.
const MaxGlobBytes = 1024

// CompileGlob validates and compiles a pattern.
func CompileGlob(pattern string) (Glob, error) {
	p := strings.TrimSpace(pattern)
	switch {
	case p == "":
		return Glob{}, fmt.Errorf("empty pattern")
	case len(p) > MaxGlobBytes:
		return Glob{}, fmt.Errorf("pattern longer than %d bytes", MaxGlobBytes)
	case strings.ContainsRune(p, 0):
		return Glob{}, fmt.Errorf("pattern %q contains a NUL byte", pattern)
	}
	dirOnly := strings.HasSuffix(p, "/")
	anchored := strings.HasPrefix(p, "/") || strings.Contains(strings.TrimSuffix(p, "/"), "/")
	p = strings.Trim(p, "/")
	if p == "" {
		return Glob{}, fmt.Errorf("pattern %q matches nothing", pattern)
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return Glob{}, fmt.Errorf("pattern %q has an empty, . or .. segment", pattern)
		}
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return Glob{}, fmt.Errorf("pattern %q: %v", pattern, err)
			}
		}
	}
	if !anchored {
		segs = append([]string{"**"}, segs...)
	}
	if dirOnly {
		segs = append(segs, "**")
	}
	return Glob{raw: pattern, segs: segs}, nil
}

// MustGlob compiles a pattern known to be valid.
func MustGlob(pattern string) Glob {
	g, err := CompileGlob(pattern)
	if err != nil {
		panic(err)
	}
	return g
}

// String returns the pattern as written.
func (g Glob) String() string { return g.raw }

// Match reports whether the slash-separated relative path p matches. A
// pattern naming a directory also matches every path below it.
func (g Glob) Match(p string) bool {
	if len(g.segs) == 0 {
		return false
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	return matchSegs(g.segs, parts) || matchPrefix(g.segs, parts)
}

func matchSegs(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range parts {
				if matchSegs(pat, parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], parts[0]); !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// matchPrefix reports whether some leading directory of parts matches the
// whole pattern ("vendor" matches "vendor/x/y.go").
func matchPrefix(pat, parts []string) bool {
	for n := len(parts) - 1; n >= 1; n-- {
		if matchSegs(pat, parts[:n]) {
			return true
		}
	}
	return false
}

// Globs is a list of patterns; it matches when any does.
type Globs []Glob

// CompileGlobs compiles every pattern.
func CompileGlobs(patterns []string) (Globs, error) {
	out := make(Globs, 0, len(patterns))
	for _, p := range patterns {
		g, err := CompileGlob(p)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// Match reports whether any pattern matches p.
func (gs Globs) Match(p string) bool {
	for _, g := range gs {
		if g.Match(p) {
			return true
		}
	}
	return false
}

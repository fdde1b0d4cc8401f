// Package workspace moves a job's files into a sandbox safely: it packs local
// directories and in-memory files into tar streams without following links,
// validates untrusted tar streams as they pass through the host (which never
// unpacks them), and unpacks them inside the sandbox through os.Root so that no
// entry can land outside /work.
package workspace

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Caps bound a workspace.
type Caps struct {
	MaxBytes int64 // total size of regular files
	MaxFiles int64 // number of entries of any kind
}

// Defaults for Caps.
const (
	DefaultMaxBytes = 256 << 20
	DefaultMaxFiles = 100_000
	MaxPathBytes    = 4096
	MaxNameBytes    = 255
)

func (c Caps) withDefaults() Caps {
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxFiles <= 0 {
		c.MaxFiles = DefaultMaxFiles
	}
	return c
}

// ErrUnsafe marks an entry that is refused: absolute or escaping path, device
// node, link that leaves the tree, and the like.
var ErrUnsafe = errors.New("unsafe workspace entry")

// ErrTooLarge marks a workspace over its caps.
var ErrTooLarge = errors.New("workspace too large")

// CleanName validates an archive member name and returns it cleaned and relative
// ("a/b/c"). It refuses absolute paths, any ".." component, NUL bytes, empty
// names, and over-long paths or components.
func CleanName(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty name", ErrUnsafe)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("%w: name contains a NUL byte", ErrUnsafe)
	}
	if len(name) > MaxPathBytes {
		return "", fmt.Errorf("%w: name of %d bytes exceeds %d", ErrUnsafe, len(name), MaxPathBytes)
	}
	if strings.HasPrefix(name, "/") || strings.Contains(name, `\`) && looksWindowsAbs(name) {
		return "", fmt.Errorf("%w: absolute path %s", ErrUnsafe, Quote(name))
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: path %s leaves the workspace", ErrUnsafe, Quote(name))
		}
		if len(part) > MaxNameBytes {
			return "", fmt.Errorf("%w: a component of %s is longer than %d bytes", ErrUnsafe, Quote(name), MaxNameBytes)
		}
	}
	c := path.Clean(name)
	if c == "." {
		return ".", nil
	}
	return c, nil
}

func looksWindowsAbs(name string) bool {
	return len(name) >= 3 && name[1] == ':' && (name[2] == '\\' || name[2] == '/')
}

// LinkStaysInside reports whether a hard link target (an archive member name)
// stays inside the tree.
func LinkStaysInside(target string) bool {
	_, err := CleanName(target)
	return err == nil
}

// Quote renders a file name for a log line or message: control characters,
// newlines, bidi overrides and invalid UTF-8 are escaped, and long names are cut.
func Quote(name string) string {
	var b strings.Builder
	b.WriteByte('"')
	n := 0
	for i, r := range name {
		if n >= 200 {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(name[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, name[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case isBidiOrInvisible(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func isBidiOrInvisible(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2060 && r <= 0x206f, r == 0xfeff, r >= 0xfff9 && r <= 0xfffb:
		return true
	}
	return false
}

package gate

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/finding"
)

// shellHeadBytes is how much of a script's start is read to find its dialect.
const shellHeadBytes = 1024

// shellDirective is ShellCheck's own "# shellcheck shell=zsh" annotation.
var shellDirective = regexp.MustCompile(`(?m)^\s*#\s*shellcheck\s+(?:[a-z]+=\S+\s+)*shell=([A-Za-z0-9_-]+)`)

// ShellOf returns the shell dialect of a script from its start and name: a
// ShellCheck "shell=" directive, else the interpreter of its #! line (also
// through env, with or without -S), else a zsh completion header (#compdef,
// #autoload), else the extension (.zsh, .fish, .bash, .ksh, .dash, .bats).
// It is "" when the file declares none (a .sh without a #! line, usually a
// file meant to be sourced).
func ShellOf(name string, head []byte) string {
	if len(head) > shellHeadBytes {
		head = head[:shellHeadBytes]
	}
	if m := shellDirective.FindSubmatch(head); m != nil {
		return strings.ToLower(string(m[1]))
	}
	first, _, _ := bytes.Cut(head, []byte("\n"))
	line := strings.TrimSpace(string(first))
	if rest, ok := strings.CutPrefix(line, "#!"); ok {
		fields := strings.Fields(rest)
		for len(fields) > 0 {
			b := path.Base(fields[0])
			fields = fields[1:]
			if b == "env" || strings.HasPrefix(b, "-") {
				continue
			}
			return strings.TrimRight(b, "0123456789.") // bash5 → bash, python3 → python
		}
	}
	if strings.HasPrefix(line, "#compdef") || strings.HasPrefix(line, "#autoload") {
		return "zsh"
	}
	switch path.Ext(name) {
	case ".zsh":
		return "zsh"
	case ".fish":
		return "fish"
	case ".bash", ".bats":
		return "bash"
	case ".ksh":
		return "ksh"
	case ".dash":
		return "dash"
	}
	return ""
}

// shellTargets splits files into those in one of the shells (or declaring
// none) and counts the others by their shell, reading each file's start from
// the snapshot once. undeclared lists the files that declare no shell,
// declined those in another shell.
func shellTargets(snap *Snapshot, files []string, shells []string) (keep, undeclared, declined []string, skipped map[string]int, err error) {
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f] = true
	}
	heads, err := readHeads(snap, want, shellHeadBytes)
	if err != nil {
		return files, nil, nil, nil, err
	}
	skipped = map[string]int{}
	for _, f := range files {
		sh := ShellOf(f, heads[f])
		switch {
		case sh == "":
			undeclared = append(undeclared, f)
			keep = append(keep, f)
		case slices.Contains(shells, sh):
			keep = append(keep, f)
		default:
			skipped[sh]++
			declined = append(declined, f)
		}
	}
	return keep, undeclared, declined, skipped, nil
}

// readHeads returns the first n bytes of the wanted regular files of the
// snapshot.
func readHeads(snap *Snapshot, want map[string]bool, n int) (map[string][]byte, error) {
	out := map[string][]byte{}
	rc, err := snap.Open()
	if err != nil {
		return out, fmt.Errorf("read scripts: open snapshot: %w", err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for len(out) < len(want) {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("read scripts: %w", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if h.Typeflag != tar.TypeReg || !want[name] {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, int64(n)))
		if err != nil {
			return out, fmt.Errorf("read scripts: %s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// ShellCheck's rules that mean it did not judge a file: SC1071, it refuses
// the file's shell; SC1072/SC1073, it could not parse it. The second is only
// taken as "another shell" for files that declare none.
const (
	scUnsupportedShell = "SC1071"
	scParseStopped     = "SC1072"
	scParseFailed      = "SC1073"
)

// Reasons ShellCheck results are set aside, per file.
const (
	SkipUnsupportedShell = "a shell ShellCheck does not support"
	SkipUnparsedShell    = "no #! line and not parseable as sh/bash (another shell?)"
)

// dropUnjudged removes the findings of files ShellCheck did not judge (see
// the SC codes above) and counts those files by reason in skipped.
func dropUnjudged(fs []finding.Finding, undeclared []string, skipped map[string]int) []finding.Finding {
	drop := map[string]string{}
	for _, f := range fs {
		switch {
		case f.RuleID == scUnsupportedShell:
			drop[f.Path] = SkipUnsupportedShell
		case (f.RuleID == scParseStopped || f.RuleID == scParseFailed) && slices.Contains(undeclared, f.Path):
			if drop[f.Path] == "" {
				drop[f.Path] = SkipUnparsedShell
			}
		}
	}
	if len(drop) == 0 {
		return fs
	}
	for _, reason := range drop {
		skipped[reason]++
	}
	return slices.DeleteFunc(fs, func(f finding.Finding) bool { return drop[f.Path] != "" })
}

// skippedText renders per-reason file counts: "zsh (3 files), fish (1 file)".
func skippedText(skipped map[string]int) string {
	parts := make([]string, 0, len(skipped))
	for _, k := range slices.Sorted(maps.Keys(skipped)) {
		unit := "files"
		if skipped[k] == 1 {
			unit = "file"
		}
		parts = append(parts, fmt.Sprintf("%s (%d %s)", k, skipped[k], unit))
	}
	return strings.Join(parts, ", ")
}

// sniffHeadBytes is how much of a file's start a Sniffer reads.
const sniffHeadBytes = 16 << 10

// Sniffer keeps the target files a tool analyses, judged from their start.
type Sniffer struct {
	// Keep reports whether the tool analyses the file named name, which
	// starts with head (at most 16 KiB).
	Keep func(name string, head []byte) bool
	// Reason is what the files set aside are counted under in the
	// analyzer's skipped files ("not a Kubernetes manifest").
	Reason string
}

// targets splits files into those Keep accepts and the others, reading each
// file's start from the snapshot once.
func (s *Sniffer) targets(snap *Snapshot, files []string) (keep, declined []string, err error) {
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f] = true
	}
	heads, err := readHeads(snap, want, sniffHeadBytes)
	if err != nil {
		return files, nil, err
	}
	for _, f := range files {
		if s.Keep(f, heads[f]) {
			keep = append(keep, f)
		} else {
			declined = append(declined, f)
		}
	}
	return keep, declined, nil
}

package gate

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/asterhq/aster/internal/finding"
)

// maxFingerprintLines bounds the snapshot lines kept in memory to fingerprint one gate
// run's findings (each at most finding.SnippetLineBytes, so at most 10 MiB); findings
// past it, in file order, are fingerprinted by their message.
const maxFingerprintLines = 20_000

// fingerprint gives the findings their fingerprints from the snapshot's text of the
// flagged lines (finding.AssignFingerprints), and makes a note of a finding about a
// switched-off check in code that implements that switch (optionNotes). The snapshot is read once, and only the
// files and lines that have findings are kept. When it cannot be read the findings keep
// the message-based fingerprints the readers gave them, and the error says why.
func fingerprint(snap *Snapshot, fs []finding.Finding) error {
	if snap == nil || len(fs) == 0 {
		return nil
	}
	want := map[string]map[int]bool{}
	optionContext(fs, want)
	total := 0
	for _, f := range fs {
		if f.StartLine <= 0 || f.Path == "" {
			continue
		}
		m := want[f.Path]
		if m == nil {
			m = map[int]bool{}
			want[f.Path] = m
		}
		for n := f.StartLine; n <= max(f.EndLine, f.StartLine) && n < f.StartLine+finding.SnippetLines; n++ {
			if !m[n] && total < maxFingerprintLines {
				m[n] = true
				total++
			}
		}
	}
	if len(want) == 0 {
		finding.AssignFingerprints(fs, nil)
		return nil
	}
	lines, err := readLines(snap, want)
	maskCredentials(fs, lines)
	finding.AssignFingerprints(fs, func(path string, n int) (string, bool) {
		s, ok := lines[path][n]
		return s, ok
	})
	// After the fingerprints, so that they do not depend on the note.
	optionNotes(fs, lines)
	return err
}

// maskCredentials blanks, in the lines a fingerprint is built from, the
// columns of every credential finding on one line: a fingerprint is posted
// with comments, and a hash of a line holding a short password could be
// reversed by trying passwords. Lines of multi-line matches (key blocks) are
// high-entropy and stay.
func maskCredentials(fs []finding.Finding, lines map[string]map[int]string) {
	for _, f := range fs {
		if f.StartLine <= 0 || f.EndLine > f.StartLine || f.StartColumn <= 0 || len(Categories(f)) == 0 {
			continue
		}
		cats := Categories(f)
		if cats[0] != CategorySecret && cats[0] != CategoryCloudKey {
			continue
		}
		l, ok := lines[f.Path][f.StartLine]
		if !ok {
			continue
		}
		start, end := f.StartColumn-1, len(l)
		if f.EndColumn > f.StartColumn && f.EndColumn-1 < end {
			end = f.EndColumn - 1
		}
		if start >= end {
			continue
		}
		lines[f.Path][f.StartLine] = l[:start] + "\x00secret\x00" + l[end:]
	}
}

// readLines returns the wanted lines of the snapshot's files.
func readLines(snap *Snapshot, want map[string]map[int]bool) (map[string]map[int]string, error) {
	out := map[string]map[int]string{}
	rc, err := snap.Open()
	if err != nil {
		return out, fmt.Errorf("fingerprint: open snapshot: %w", err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	br := bufio.NewReaderSize(nil, 64<<10)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("fingerprint: read snapshot: %w", err)
		}
		lines := want[strings.TrimPrefix(h.Name, "./")]
		if h.Typeflag != tar.TypeReg || lines == nil {
			continue
		}
		got := map[int]string{}
		out[strings.TrimPrefix(h.Name, "./")] = got
		br.Reset(tr)
		last := 0
		for n := range lines {
			last = max(last, n)
		}
		for n := 1; n <= last; n++ {
			text, err := readLine(br)
			if lines[n] && (err == nil || text != "") {
				got[n] = text
			}
			if err != nil {
				break
			}
		}
	}
}

// readLine reads one line without its newline, keeping at most
// finding.SnippetLineBytes of it; err is io.EOF at the end of the file.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(b) < finding.SnippetLineBytes {
			b = append(b, chunk[:min(len(chunk), finding.SnippetLineBytes-len(b))]...)
		}
		switch {
		case err == nil:
			return strings.TrimRight(string(b), "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return strings.TrimRight(string(b), "\r\n"), err
		}
	}
}

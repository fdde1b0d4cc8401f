// Every fingerprint Aster computes lives here, so that what identifies a
// finding or a comment across pushes is defined once: a finding's own
// (AssignFingerprints, ComputeFingerprint, LegacyFingerprint), a model
// comment's (CommentFingerprint), and the ids the hidden markers of posted
// comments carry (MarkerIDs, LegacyMarkerID, CommentMarkerID), which, like a
// model comment's, are a Fingerprint of parts.

package finding

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// LegacyFingerprint is the fingerprint Aster wrote before occurrences were
// told apart: analyzer, rule, path and message, so every repeat of a rule's
// message in one file shared it. It is kept only so that markers already
// posted on a pull request (GitHub comments carry them) are still recognised
// after an upgrade; nothing new is identified by it.
func LegacyFingerprint(f Finding) string {
	h := sha256.New()
	for _, s := range []string{f.Analyzer, f.RuleID, f.Path, f.Message} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// LineSource returns the text of line n (1-based) of path, and false when it
// does not have it (file not in the snapshot, line past its end).
type LineSource func(path string, n int) (string, bool)

// Bounds of the text a fingerprint is built from: the first lines of the
// flagged range, each cut to a length no real source line needs.
const (
	SnippetLines     = 3
	SnippetLineBytes = 512
)

// AssignFingerprints sets every finding's Fingerprint. It identifies a
// finding by analyzer, rule, path and the whitespace-collapsed text of its
// flagged lines (at most SnippetLines), plus its occurrence index among the
// findings with that same key, in file order. No line number goes in, so
// inserting or removing lines above a finding keeps its fingerprint, and two
// occurrences of one rule in one file (two shell=True calls, two keys) get
// two. When src is nil or lacks a line (a file-level finding, a file outside
// the snapshot), the normalised message stands in for the text.
//
// The occurrence index is what keeps identical lines apart; its cost is that
// a new identical line above older ones takes the first index, so the finding
// reported as new is the last of them rather than the one added.
func AssignFingerprints(fs []Finding, src LineSource) {
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = fingerprintKey(f, src)
	}
	// File order within a key: by place, then message, so the index does not
	// depend on the order an analyzer printed its results in.
	occ := Occurrences(keys, func(a, b int) int {
		fa, fb := fs[a], fs[b]
		return cmp.Or(cmp.Compare(fa.StartLine, fb.StartLine),
			cmp.Compare(fa.StartColumn, fb.StartColumn), cmp.Compare(fa.Message, fb.Message))
	})
	for i, key := range keys {
		h := sha256.New()
		h.Write([]byte(key))
		h.Write([]byte(strconv.Itoa(occ[i])))
		fs[i].Fingerprint = fingerprintPrefix + hex.EncodeToString(h.Sum(nil)[:12])
	}
}

// Occurrences gives each of keys its occurrence index among the equal keys:
// 0 for the first, 1 for the second, and so on. Equal keys are counted in the
// order place (a comparison of the items at two indexes of keys) puts them;
// ties keep their order in keys.
func Occurrences(keys []string, place func(i, j int) int) []int {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(keys[a], keys[b]), place(a, b))
	})
	occ := make([]int, len(keys))
	for j := 1; j < len(order); j++ {
		if keys[order[j]] == keys[order[j-1]] {
			occ[order[j]] = occ[order[j-1]] + 1
		}
	}
	return occ
}

// fingerprintPrefix marks the current scheme, so a fingerprint is never
// mistaken for a LegacyFingerprint (plain hex) by anything that stores both.
const fingerprintPrefix = "v2:"

// ComputeFingerprint is the fingerprint of f alone, without its file's text:
// what AssignFingerprints(fs, nil) gives the first occurrence of its key. The
// gate replaces it with one built from the flagged lines.
func ComputeFingerprint(f Finding) string {
	fs := []Finding{f}
	AssignFingerprints(fs, nil)
	return fs[0].Fingerprint
}

func fingerprintKey(f Finding, src LineSource) string {
	text := ""
	if src != nil && f.StartLine > 0 {
		var lines []string
		for n := f.StartLine; n <= max(f.EndLine, f.StartLine) && n < f.StartLine+SnippetLines; n++ {
			l, ok := src(f.Path, n)
			if !ok {
				lines = nil
				break
			}
			if len(l) > SnippetLineBytes {
				l = l[:SnippetLineBytes]
			}
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
		if lines != nil {
			text = "text\x00" + strings.Join(lines, "\n")
		}
	}
	if text == "" {
		text = "message\x00" + strings.Join(strings.Fields(f.Message), " ")
	}
	return strings.Join([]string{f.Analyzer, f.RuleID, f.Path, text}, "\x00") + "\x00"
}

// Fingerprint is a stable id made of parts: the hex of SHA-256 over the parts
// (separated so ("ab","c") and ("a","bc") differ), cut to 16 bytes. Build it
// from what identifies a thing across pushes (path, rule, normalised message),
// not from the line number, which moves. It is what the hidden marker of a
// posted comment carries.
func Fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// CommentFingerprint identifies a model comment across runs by what it is
// about (file, the code line, severity), not by its wording, which changes
// every run: a re-review does not post the same point again. Whitespace in
// code does not count.
func CommentFingerprint(path, code string, sev Severity) string {
	return Fingerprint("aster-model", path, withoutSpace(code), string(sev))
}

func withoutSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// MarkerIDs identifies each finding across pushes in the marker of its posted
// comment, aligned with fs. A finding from the pipeline carries the gate's
// fingerprint (the flagged line's text and the occurrence index, see
// AssignFingerprints). One without (a Reviewer that does not compute them) is
// identified by what and where (file) it is, plus its occurrence index among
// the same; the first occurrence keeps the value that scheme always had.
func MarkerIDs(fs []Finding) []string {
	out := make([]string, len(fs))
	var bare []int // the indexes in fs of the findings without a fingerprint
	var keys []string
	for i, f := range fs {
		if f.Fingerprint != "" {
			out[i] = Fingerprint("finding", f.Fingerprint)
			continue
		}
		bare = append(bare, i)
		keys = append(keys, f.Analyzer+"\x00"+f.RuleID+"\x00"+f.Path+"\x00"+strings.Join(strings.Fields(f.Message), " "))
	}
	occ := Occurrences(keys, func(a, b int) int {
		return cmp.Compare(fs[bare[a]].StartLine, fs[bare[b]].StartLine)
	})
	for j, i := range bare {
		f := fs[i]
		parts := []string{"finding", f.Analyzer, f.RuleID, f.Path, strings.Join(strings.Fields(f.Message), " ")}
		if occ[j] > 0 {
			parts = append(parts, "#"+strconv.Itoa(occ[j]))
		}
		out[i] = Fingerprint(parts...)
	}
	return out
}

// LegacyMarkerID is the marker an Aster from before occurrence-aware
// fingerprints posted for f: it hashed analyzer, rule, path and message only,
// so one marker stood for every repeat of a message in a file (and only the
// first was ever posted). Markers of that kind stay on pull requests after an
// upgrade; publish.Comment.Aliases lets one of them cover one finding, so an
// upgrade neither reposts what was posted nor hides what was new. "" when f's
// fingerprint is not of the current scheme (then it already is the old value).
func LegacyMarkerID(f Finding) string {
	if !strings.HasPrefix(f.Fingerprint, fingerprintPrefix) {
		return ""
	}
	return Fingerprint("finding", LegacyFingerprint(Finding{
		Analyzer: f.Analyzer, RuleID: f.RuleID, Path: f.Path, Message: f.Message}))
}

// CommentMarkerID identifies a model comment in the marker of its posted
// comment: by its CommentFingerprint, or, for a comment without one, by its
// file and whitespace-collapsed body.
func CommentMarkerID(fingerprint, path, body string) string {
	if fingerprint != "" {
		return Fingerprint("model", fingerprint)
	}
	return Fingerprint("model", path, strings.Join(strings.Fields(body), " "))
}

package finding

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
)

// fileSource serves the lines of in-memory files, as the gate serves the snapshot's.
func fileSource(files map[string]string) LineSource {
	return func(path string, n int) (string, bool) {
		lines := strings.Split(files[path], "\n")
		if n < 1 || n > len(lines) {
			return "", false
		}
		return lines[n-1], true
	}
}

// shellcheckLike lists an SC2086 finding (one message for all) on every line of src holding
// "$1", as ShellCheck reports them.
func shellcheckLike(path, src string) []Finding {
	var fs []Finding
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "$1") {
			fs = append(fs, Finding{Analyzer: "shellcheck", RuleID: "SC2086", Path: path, StartLine: i + 1, EndLine: i + 1,
				StartColumn: strings.Index(l, "$1") + 1, Message: "Double quote to prevent globbing and word splitting."})
		}
	}
	return fs
}

func fingerprints(fs []Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Fingerprint
	}
	return out
}

// TestFingerprintsTellOccurrencesApart: 55 warnings of one rule with one message in one
// file, on different lines and on identical lines, get 55 fingerprints.
func TestFingerprintsTellOccurrencesApart(t *testing.T) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for i := range 50 {
		b.WriteString("echo $1 " + strings.Repeat("x", i) + "\n")
	}
	for range 5 {
		b.WriteString("rm -rf $1\n") // identical lines: only the occurrence index tells them apart
	}
	src := b.String()
	fs := shellcheckLike("run.sh", src)
	if len(fs) != 55 {
		t.Fatalf("%d findings, want 55", len(fs))
	}
	AssignFingerprints(fs, fileSource(map[string]string{"run.sh": src}))
	seen := map[string]bool{}
	for _, f := range fs {
		if !strings.HasPrefix(f.Fingerprint, "v2:") || seen[f.Fingerprint] {
			t.Fatalf("line %d: fingerprint %q empty, unversioned or repeated", f.StartLine, f.Fingerprint)
		}
		seen[f.Fingerprint] = true
	}
	// Without the file's text the message stands in, and the index still separates them.
	AssignFingerprints(fs, nil)
	clear(seen)
	for _, f := range fs {
		if seen[f.Fingerprint] {
			t.Fatalf("without text, line %d repeats a fingerprint", f.StartLine)
		}
		seen[f.Fingerprint] = true
	}
}

// TestFingerprintsSurviveLineMoves: blank lines inserted above, re-indentation and a
// different analyzer output order change no fingerprint; a second occurrence of the rule
// added below gets a new one and leaves the first one's alone.
func TestFingerprintsSurviveLineMoves(t *testing.T) {
	before := "import subprocess\n\ndef run(cmd):\n    subprocess.call(cmd, shell=True)\n"
	finds := func(src string) []Finding {
		var fs []Finding
		for i, l := range strings.Split(src, "\n") {
			if strings.Contains(l, "shell=True") {
				fs = append(fs, Finding{Analyzer: "bandit", RuleID: "B602", Path: "app.py", StartLine: i + 1, EndLine: i + 1,
					Message: "subprocess call with shell=True identified, security issue."})
			}
		}
		AssignFingerprints(fs, fileSource(map[string]string{"app.py": src}))
		return fs
	}
	orig := finds(before)
	moved := finds("\n\n\n" + strings.Replace(before, "    subprocess", "\tsubprocess", 1))
	if len(orig) != 1 || len(moved) != 1 || moved[0].StartLine != orig[0].StartLine+3 {
		t.Fatalf("findings %+v / %+v", orig, moved)
	}
	if orig[0].Fingerprint != moved[0].Fingerprint {
		t.Errorf("moving the line changed its fingerprint: %s → %s", orig[0].Fingerprint, moved[0].Fingerprint)
	}
	second := finds(before + "\ndef run2(cmd):\n    subprocess.call(cmd, shell=True)\n")
	if len(second) != 2 || second[0].Fingerprint != orig[0].Fingerprint || second[1].Fingerprint == orig[0].Fingerprint {
		t.Errorf("second occurrence: %v, first was %s", fingerprints(second), orig[0].Fingerprint)
	}
	// An edit of the flagged line itself is a new finding.
	edited := finds(strings.Replace(before, "call(cmd", "call(cmd + x", 1))
	if edited[0].Fingerprint == orig[0].Fingerprint {
		t.Error("an edited flagged line kept its fingerprint")
	}

	// The order an analyzer prints in does not matter.
	src := "echo $1\necho $1\necho $1 two\n"
	fs := shellcheckLike("a.sh", src)
	AssignFingerprints(fs, fileSource(map[string]string{"a.sh": src}))
	want := fingerprints(fs)
	rev := slices.Clone(fs)
	slices.Reverse(rev)
	AssignFingerprints(rev, fileSource(map[string]string{"a.sh": src}))
	slices.Reverse(rev)
	if got := fingerprints(rev); !slices.Equal(got, want) {
		t.Errorf("reversed input: %v, want %v", got, want)
	}
}

// TestLegacyFingerprint pins the old scheme, which reads back markers already posted on
// pull requests: SHA-256 over analyzer, rule, path and message, NUL-separated, 12 bytes.
func TestLegacyFingerprint(t *testing.T) {
	f := Finding{Analyzer: "bandit", RuleID: "B602", Path: "app.py", Message: "shell=True", StartLine: 4}
	sum := sha256.Sum256([]byte("bandit\x00B602\x00app.py\x00shell=True\x00"))
	if got, want := LegacyFingerprint(f), hex.EncodeToString(sum[:12]); got != want {
		t.Errorf("LegacyFingerprint = %s, want %s", got, want)
	}
	g := f
	g.StartLine = 40
	if LegacyFingerprint(g) != LegacyFingerprint(f) {
		t.Error("the legacy fingerprint depended on the line")
	}
	if ComputeFingerprint(f) == LegacyFingerprint(f) {
		t.Error("the new fingerprint equals the legacy one")
	}
}

// Occurrences counts each key's repeats in the order place gives, whatever order they come
// in; ties keep their input order.
func TestOccurrences(t *testing.T) {
	keys := []string{"b", "a", "b", "a", "c", "b", "a"}
	lines := []int{30, 20, 10, 5, 1, 10, 20}
	got := Occurrences(keys, func(i, j int) int { return lines[i] - lines[j] })
	// The a's count in the order of indexes 3 (line 5), 1 and 6 (both line 20, input order);
	// the b's in the order 2, 5 (both line 10), 0 (line 30).
	want := []int{2, 1, 0, 0, 0, 1, 2}
	if !slices.Equal(got, want) {
		t.Errorf("Occurrences = %v, want %v", got, want)
	}
	if got := Occurrences(nil, nil); len(got) != 0 {
		t.Errorf("Occurrences(nil) = %v", got)
	}
}

package gate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/sandbox"
)

// shellcheckOut is ShellCheck's json1 report of SC2086 on every line of src holding "$1".
func shellcheckOut(path, src string) string {
	var cs []string
	for i, l := range strings.Split(src, "\n") {
		if c := strings.Index(l, "$1"); c >= 0 {
			cs = append(cs, fmt.Sprintf(`{"file":%q,"line":%d,"endLine":%d,"column":%d,"endColumn":%d,"level":"info","code":2086,"message":"Double quote to prevent globbing and word splitting."}`,
				path, i+1, i+1, c+1, c+3))
		}
	}
	return `{"comments":[` + strings.Join(cs, ",") + `]}`
}

func gateFingerprints(t *testing.T, src string) []finding.Finding {
	t.Helper()
	snap := testSnapshot(t, map[string]string{"run.sh": src})
	fake := newFake(func(spec sandbox.Spec) (sandbox.Result, error) { return ok(shellcheckOut("run.sh", src), 1), nil })
	a := Analyzer{Name: "shellcheck", Command: []string{"shellcheck", "-f", "json1", "{files}"}, Format: finding.FormatShellcheck, Files: []string{"*.sh"}}
	res := NewRunner(fake, RunnerOptions{}).Run(t.Context(), Request{Snapshot: snap, Analyzers: []Analyzer{a}})
	if res.Analyzers[0].Status != StatusOK {
		t.Fatalf("%+v", res.Analyzers[0])
	}
	return res.Findings
}

// TestGateFingerprintsFromSnapshotText: the gate fingerprints findings with the snapshot's
// text of the flagged lines. One rule with one message on two different lines gives two
// fingerprints; blank lines inserted above and a line longer than the reader's buffer
// change neither.
func TestGateFingerprintsFromSnapshotText(t *testing.T) {
	long := "echo " + strings.Repeat("y", 100<<10) // past bufio's 64 KiB buffer
	src := "#!/bin/sh\necho $1 a\n" + long + "\necho $1 b\n"
	fs := gateFingerprints(t, src)
	if len(fs) != 2 || fs[0].Fingerprint == fs[1].Fingerprint || !strings.HasPrefix(fs[0].Fingerprint, "v2:") {
		t.Fatalf("findings %+v", fs)
	}
	// The gate used the text, not the message: the same fingerprints as from the lines.
	lines := strings.Split(src, "\n")
	again := []finding.Finding{fs[0], fs[1]}
	finding.AssignFingerprints(again, func(_ string, n int) (string, bool) { return lines[n-1], true })
	if want := again[1].Fingerprint; fs[1].Fingerprint != want {
		t.Errorf("second finding %s, want %s (from its line's text)", fs[1].Fingerprint, want)
	}
	moved := gateFingerprints(t, "#!/bin/sh\n\n\n\n"+strings.TrimPrefix(src, "#!/bin/sh\n"))
	if len(moved) != 2 || moved[0].StartLine != 5 {
		t.Fatalf("moved findings %+v", moved)
	}
	for i := range fs {
		if moved[i].Fingerprint != fs[i].Fingerprint {
			t.Errorf("finding %d: moved from line %d to %d, fingerprint %s → %s", i, fs[i].StartLine, moved[i].StartLine, fs[i].Fingerprint, moved[i].Fingerprint)
		}
	}
}

// TestExitCodeMatchesStatus is the rule of AnalyzerResult.ExitCode: error and timeout carry
// -1 even when the sandbox said 0 or 137; a sandbox-killed run carries -1; a tool that ran
// to its end carries its own status.
func TestExitCodeMatchesStatus(t *testing.T) {
	snap := testSnapshot(t, map[string]string{"a.sh": "#!/bin/sh\necho $1\n"})
	fake := newFake(func(spec sandbox.Spec) (sandbox.Result, error) {
		switch spec.Argv[0] {
		case "found":
			return ok(oneSARIF, 1), nil
		case "crash":
			return ok("", 2), nil
		case "garbage":
			return ok("not json", 0), nil
		case "remote-error": // a remote sandbox that fails with a zero exit code
			return sandbox.Result{Status: sandbox.StatusError, ExitCode: 0, Error: "proxy said no"}, sandbox.ErrUnavailable
		case "slow":
			return sandbox.Result{Status: sandbox.StatusTimeout, ExitCode: 137}, nil
		case "oom":
			return sandbox.Result{Status: sandbox.StatusOOM, ExitCode: 137}, nil
		case "absent":
			return ok("", 127), nil
		}
		return sandbox.Result{}, fmt.Errorf("unexpected %q", spec.Argv)
	})
	var as []Analyzer
	for _, n := range []string{"found", "crash", "garbage", "remote-error", "slow", "oom", "absent"} {
		as = append(as, Analyzer{Name: n, Command: []string{n, "{files}"}, Format: finding.FormatSARIF, Files: []string{"*.sh"}, Optional: n == "absent"})
	}
	as = append(as, Analyzer{Name: "nothing", Command: []string{"nothing", "{files}"}, Format: finding.FormatSARIF, Files: []string{"*.rb"}})
	want := map[string]struct {
		st   Status
		code int
	}{
		"found": {StatusOK, 1}, "crash": {StatusFailed, 2}, "garbage": {StatusFailed, 0}, "remote-error": {StatusError, -1},
		"slow": {StatusTimeout, -1}, "oom": {StatusFailed, -1}, "absent": {StatusSkipped, 127}, "nothing": {StatusSkipped, -1},
	}
	res := NewRunner(fake, RunnerOptions{}).Run(t.Context(), Request{Snapshot: snap, Analyzers: as})
	for _, a := range res.Analyzers {
		w := want[a.Name]
		if a.Status != w.st || a.ExitCode != w.code {
			t.Errorf("%s: status %s exit %d, want %s exit %d", a.Name, a.Status, a.ExitCode, w.st, w.code)
		}
		if (a.Status == StatusError || a.Status == StatusTimeout) && a.ExitCode != -1 {
			t.Errorf("%s: %s with exit code %d", a.Name, a.Status, a.ExitCode)
		}
	}
}

// TestFingerprintHidesCredentials: a credential's columns do not enter the
// fingerprint (it is posted with comments), so two passwords on the same line
// give the same one, and the other text of the line still counts.
func TestFingerprintHidesCredentials(t *testing.T) {
	fp := func(line string) string {
		fs := []finding.Finding{{Analyzer: "gitleaks", RuleID: "generic-api-key", Path: "a.py", StartLine: 1, EndLine: 1, StartColumn: 13, EndColumn: 21}}
		lines := map[string]map[int]string{"a.py": {1: line}}
		maskCredentials(fs, lines)
		if strings.Contains(lines["a.py"][1], "hunter") || !strings.HasSuffix(lines["a.py"][1], `"`) {
			t.Errorf("secret left in %q", lines["a.py"][1])
		}
		finding.AssignFingerprints(fs, func(p string, n int) (string, bool) { s, ok := lines[p][n]; return s, ok })
		return fs[0].Fingerprint
	}
	if a, b := fp(`password = "hunter22"`), fp(`password = "hunter33"`); a != b {
		t.Errorf("fingerprint depends on the secret: %s %s", a, b)
	}
	if a, b := fp(`password = "hunter22"`), fp(`passwort = "hunter22"`); a == b {
		t.Error("fingerprint ignores the rest of the line")
	}
}

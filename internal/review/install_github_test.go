package review

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/testrun"
)

// The App's summary comment and check run say what the install phase did,
// escaped and redacted as everything else from the repository.
func TestGitHubInstallPhase(t *testing.T) {
	rep := &Report{Files: FilesInfo{Changed: 1}, Tests: &TestsReport{Status: TestsError, Command: []string{"npm", "test"},
		Reason: "the install phase failed, the tests did not run", Summary: testrun.Summary{Failures: []testrun.Failure{}},
		Install: &api.InstallResult{Status: api.InstallFailed, Kind: "npm", Command: []string{"npm", "ci"}, DurationMS: 3100,
			Reason: "the install command exited with code 1", Cache: api.CacheMiss,
			ErrorLines: []string{"npm ERR! <img src=x> 404 `left-pad` token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"},
			Downloads:  api.Downloads{Hosts: []string{"registry.example"}, Bytes: 4096, Connections: 1, Refused: 2}}}}
	rep.Summary = gate.Summarize(nil)
	rep = RedactReport(rep, safetext.NewRedactor(nil))
	body := Summary(rep, SummaryOptions{Head: "0123456789abcdef"})
	for _, want := range []string{"| Dependencies | install npm failed in 3.1s, 4KiB from registry", "2 connections refused, cache miss: the install command exited with code 1 |"} {
		if !strings.Contains(body, want) {
			t.Errorf("summary lacks %q:\n%s", want, body)
		}
	}
	_, _, text := CheckOutput(rep, "0123456789abcdef", "")
	if !strings.Contains(text, "Dependencies: install npm failed") || !strings.Contains(text, "First error lines of the install:") {
		t.Errorf("check run text:\n%s", text)
	}
	if !strings.Contains(text, `\<img`) || strings.Contains(text, " <img") || strings.Contains(text, "ghp_0123456789") {
		t.Errorf("the install's output reached the check run unescaped or unredacted:\n%s", text)
	}
}

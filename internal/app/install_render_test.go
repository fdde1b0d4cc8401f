package app

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
)

// The summary comment and the check run say what the install phase did,
// escaped as everything else from the repository.
func TestRenderInstallPhase(t *testing.T) {
	out := ReviewOutput{Conclusion: ConclusionNeutral, Tests: &TestsInfo{Status: "error", Command: []string{"npm", "test"},
		Reason: "the install phase failed, the tests did not run", Install: &api.InstallResult{Status: api.InstallFailed, Kind: "npm",
			Command: []string{"npm", "ci"}, DurationMS: 3100, Reason: "the install command exited with code 1", Cache: api.CacheMiss,
			ErrorLines: []string{"npm ERR! <img src=x> 404 `left-pad`"},
			Downloads:  api.Downloads{Hosts: []string{"registry.example"}, Bytes: 4096, Connections: 1, Refused: 2}}}}
	body := renderSummary(summaryInput{Out: out, Head: "0123456789abcdef"})
	for _, want := range []string{"| Dependencies | install npm failed in 3.1s, 4KiB from registry", "2 connections refused, cache miss: the install command exited with code 1 |"} {
		if !strings.Contains(body, want) {
			t.Errorf("summary lacks %q:\n%s", want, body)
		}
	}
	_, _, text := checkOutput(out, "0123456789abcdef", "")
	if !strings.Contains(text, "Dependencies: install npm failed") || !strings.Contains(text, "First error lines of the install:") {
		t.Errorf("check run text:\n%s", text)
	}
	if !strings.Contains(text, `\<img`) || strings.Contains(text, " <img") || strings.Contains(text, " `left-pad`") {
		t.Errorf("the install's output reached the check run unescaped:\n%s", text)
	}
}

package review

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/testrun"
)

// The tests section says which phase failed and why, what was downloaded,
// the cache and the time per phase, in Markdown and JSON.
func TestReportInstallPhase(t *testing.T) {
	for _, c := range []struct {
		name    string
		tests   *TestsReport
		want    []string
		notWant []string
	}{
		{"install failed", &TestsReport{Status: TestsError, Command: []string{"npm", "test"}, Reason: "the install phase failed, the tests did not run: the install command exited with code 1",
			Summary: testrun.Summary{Failures: []testrun.Failure{}},
			Install: &api.InstallResult{Status: api.InstallFailed, Kind: "npm", Command: []string{"npm", "ci", "--no-audit", "--no-fund"}, Reason: "the install command exited with code 1",
				DurationMS: 4200, ExitCode: 1, ErrorLines: []string{"npm ERR! 404 Not Found - GET left-pad`"}, Cache: api.CacheMiss,
				Downloads: api.Downloads{Hosts: []string{"registry.example"}, Bytes: 2048, Connections: 2, Refused: 1, RefusedHosts: []string{"evil.example"}}}},
			[]string{"- install (npm): FAILED after 4.2s, the tests did not run: npm ci --no-audit --no-fund", "- install failure: the install command exited with code 1",
				"- downloads: 2KiB from registry.example over 2 connections; 1 refused (evil.example)", "- dependency cache: miss",
				"  ```text\n  npm ERR! 404 Not Found - GET left-pad'\n  ```"},
			[]string{"`npm test` —"}},
		{"cached", &TestsReport{Status: TestsPassed, Command: []string{"npm", "test"}, DurationMS: 3000, TestDurationMS: 1500,
			Summary: testrun.Summary{Passed: 3, Failures: []testrun.Failure{}},
			Install: &api.InstallResult{Status: api.InstallCached, Kind: "npm", Command: []string{"npm", "ci"}, ExitCode: -1, Cache: api.CacheHit, Downloads: api.Downloads{Hosts: []string{}}}},
			[]string{"- install (npm): skipped, dependencies restored from the cache: npm ci", "- dependency cache: hit", "`npm test` — 3 passed, 0 failed, 0 skipped (1.5s)"},
			[]string{"downloads:"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := &Report{Files: FilesInfo{Changed: 1}, Tests: c.tests}
			rep.Summary = gate.Summarize(nil)
			var md bytes.Buffer
			if err := WriteMarkdown(&md, rep); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(md.String(), w) {
					t.Errorf("markdown lacks %q:\n%s", w, md.String())
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(md.String(), w) {
					t.Errorf("markdown has %q:\n%s", w, md.String())
				}
			}
			b, err := json.Marshal(rep.Tests)
			if err != nil {
				t.Fatal(err)
			}
			var back TestsReport
			if err := json.Unmarshal(b, &back); err != nil || back.Install == nil || back.Install.Status != c.tests.Install.Status {
				t.Fatalf("JSON round trip: %v %s", err, b)
			}
		})
	}
}

package finding

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleFindings(t *testing.T) []Finding {
	t.Helper()
	var all []Finding
	for _, c := range goldenCases {
		res := readFixture(t, c.file, c.format)
		for _, f := range res.Findings {
			f.Analyzer = strings.Split(filepath.Base(c.file), ".")[0]
			all = append(all, f)
		}
	}
	return all
}

// TestWriteRoundTrip writes findings as SARIF and reads them back.
func TestWriteRoundTrip(t *testing.T) {
	in := sampleFindings(t)
	var buf bytes.Buffer
	exit := 1
	err := WriteSARIF(&buf, in, WriteOptions{
		ToolVersion: "test",
		Runs:        []RunInfo{{Analyzer: "gitleaks", InformationURI: "https://github.com/gitleaks/gitleaks", Succeeded: true}, {Analyzer: "broken", Succeeded: false, Message: "timed out after 2m", ExitCode: &exit}},
		Properties:  func(i int) map[string]any { return map[string]any{"aster": map[string]any{"index": i}} },
		SourceRoot:  "/home/me/repo",
	})
	if err != nil {
		t.Fatal(err)
	}
	var log sarifLog
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || log.Schema != SARIFSchemaURI {
		t.Errorf("version %q schema %q", log.Version, log.Schema)
	}
	if log.Runs[0].Tool.Driver.Name != "gitleaks" || log.Runs[1].Invocations[0].ExecutionSuccessful {
		t.Errorf("runs: %+v", log.Runs[:2])
	}
	if got := log.Runs[0].OriginalURIBaseIDs[SRCROOT].URI; got != "file:///home/me/repo/" {
		t.Errorf("SRCROOT = %q", got)
	}
	// Read each run back as its own analyzer and compare what matters.
	var back []Finding
	for _, run := range log.Runs {
		one := sarifLog{Version: "2.1.0", Runs: []sarifRun{run}}
		b, _ := json.Marshal(one)
		res, err := ReadSARIF(bytes.NewReader(b), ReadOptions{Analyzer: run.Tool.Driver.Name})
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, res.Findings...)
	}
	norm := func(fs []Finding) []Finding {
		out := make([]Finding, len(fs))
		for i, f := range fs {
			f.Message = sentence(f.Message)
			f.Fingerprint = ""
			if f.RuleName != "" && !isPascalish(f.RuleName) {
				f.RuleName = ""
			}
			if f.Fix != nil {
				f.Fix.Description = sentence(f.Fix.Description)
			}
			out[i] = f
		}
		Sort(out)
		return out
	}
	if d := cmp.Diff(norm(in), norm(back)); d != "" {
		t.Errorf("round trip (-in +back):\n%s", d)
	}
}

// TestWriteValidates runs Microsoft's SARIF validator on the writer's output
// (scripts/validate-sarif.sh; fetch-test-deps.sh installs the validator). It
// is skipped when the validator is absent, unless CI is set.
func TestWriteValidates(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the validator package is installed for linux/amd64 here")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	tool := filepath.Join(root, "third_party", "sarif", "node_modules", ".bin", "sarif-multitool")
	if _, err := os.Stat(tool); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("SARIF validator missing in CI (scripts/fetch-test-deps.sh): %v", err)
		}
		t.Skipf("SARIF validator not installed (run scripts/fetch-test-deps.sh): %v", err)
	}
	path := filepath.Join(t.TempDir(), "out.sarif")
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, sampleFindings(t), WriteOptions{ToolVersion: "test", SourceRoot: "/src/repo"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(root, "scripts", "validate-sarif.sh"), path)
	out, err := cmd.CombinedOutput()
	t.Logf("validator:\n%s", out)
	if err != nil {
		t.Fatalf("SARIF validation failed: %v", err)
	}
}

func TestWriteEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, nil, WriteOptions{Runs: []RunInfo{{Analyzer: "gitleaks", Succeeded: true}}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"results": []`) {
		t.Errorf("an empty run must still carry results: []\n%s", buf.String())
	}
	res, err := ReadSARIF(&buf, ReadOptions{})
	if err != nil || len(res.Findings) != 0 {
		t.Errorf("%v %+v", err, res)
	}
}

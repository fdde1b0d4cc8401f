package astgrep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// astGrep returns the ast-grep binary the fixtures run on: ASTER_TEST_AST_GREP,
// else the build scripts/fetch-test-deps.sh installs under third_party/astgrep
// (the version the sandbox image pins). Missing, the test skips, or fails
// under CI.
func astGrep(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ASTER_TEST_AST_GREP")
	if bin == "" {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
		arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
		bin = filepath.Join(root, "third_party", "astgrep", "node_modules", "@ast-grep", "cli-linux-"+arch+"-gnu", "ast-grep")
	}
	if _, err := os.Stat(bin); err != nil || runtime.GOOS != "linux" {
		if os.Getenv("CI") != "" {
			t.Fatalf("ast-grep missing in CI (scripts/fetch-test-deps.sh installs it): %v", err)
		}
		t.Skipf("ast-grep not installed (run scripts/fetch-test-deps.sh or set ASTER_TEST_AST_GREP): %v", err)
	}
	return bin
}

// match is the part of one line of `ast-grep scan --json=stream` the test reads.
type match struct {
	File   string `json:"file"`
	RuleID string `json:"ruleId"`
	Range  struct {
		Start struct {
			Line int `json:"line"`
		} `json:"start"`
	} `json:"range"`
}

// scan runs the real binary with the unpacked pack over dir and returns
// "file:line" (1-based) per rule id.
func scan(t *testing.T, bin, dir string) map[string][]string {
	t.Helper()
	packDir := t.TempDir()
	unpack(t, packDir)
	cmd := exec.CommandContext(context.Background(), bin, append(ScanArgs(filepath.Join(packDir, ConfigFile)), ".")...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
		t.Fatalf("ast-grep: %v\n%s", err, stderr.String())
	}
	out := map[string][]string{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m match
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("ast-grep printed %q: %v", sc.Text(), err)
		}
		out[m.RuleID] = append(out[m.RuleID], fmt.Sprintf("%s:%d", filepath.ToSlash(m.File), m.Range.Start.Line+1))
	}
	return out
}

// unpack writes the pack the way the sandbox receives it: from Tar.
func unpack(t *testing.T, dir string) {
	t.Helper()
	b, err := Tar(nil)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), "tar", "-x", "-C", dir)
	cmd.Stdin = bytes.NewReader(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
}

var markRE = regexp.MustCompile(`(?:#|//)\s*ruleid:\s*([a-z0-9.-]+)`)

// TestFixtures runs the real ast-grep over testdata/<rule id>/: every line
// after a "ruleid: <id>" comment in positive.* must be reported by that rule
// and nothing else by it; negative.* must be reported by no rule at all.
func TestFixtures(t *testing.T) {
	bin := astGrep(t)
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	got := scan(t, bin, "testdata")
	for _, r := range rules {
		t.Run(r.ID, func(t *testing.T) {
			pos, _ := filepath.Glob(filepath.Join("testdata", r.ID, "positive.*"))
			neg, _ := filepath.Glob(filepath.Join("testdata", r.ID, "negative.*"))
			if len(pos) == 0 || len(neg) == 0 {
				t.Fatalf("rule %s needs testdata/%s/positive.* and negative.*", r.ID, r.ID)
			}
			var want []string
			for _, p := range pos {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				for i, line := range strings.Split(string(b), "\n") {
					if m := markRE.FindStringSubmatch(line); m != nil {
						if m[1] != r.ID {
							t.Fatalf("%s:%d marks %s, not this directory's rule", p, i+1, m[1])
						}
						want = append(want, fmt.Sprintf("%s:%d", strings.TrimPrefix(filepath.ToSlash(p), "testdata/"), i+2))
					}
				}
			}
			if len(want) < 2 {
				t.Errorf("rule %s has %d marked positives; give it at least 2", r.ID, len(want))
			}
			var have []string
			for _, loc := range got[r.ID] {
				if strings.HasPrefix(loc, r.ID+"/positive.") {
					have = append(have, loc)
				}
			}
			slices.Sort(want)
			slices.Sort(have)
			if !slices.Equal(have, want) {
				t.Errorf("positives: reported %v, want %v", have, want)
			}
		})
	}
	// Negatives and the other rules' positives: no rule fires on a negative,
	// and a rule fires on no other rule's positive file only if marked there.
	for id, locs := range got {
		for _, loc := range locs {
			if strings.Contains(loc, "/negative.") {
				t.Errorf("%s fired on negative fixture %s", id, loc)
			} else if !strings.HasPrefix(loc, id+"/") {
				t.Errorf("%s fired on another rule's fixture %s", id, loc)
			}
		}
	}
}

// TestPack checks what every rule must carry: a unique aster.<lang>.<name>
// id, a CWE, a severity, a message and a CWE link.
func TestPack(t *testing.T) {
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) < 20 {
		t.Fatalf("%d rules", len(rules))
	}
	idRE := regexp.MustCompile(`^aster\.(python|js|go|shell|java|kotlin|php|ruby|csharp)\.[a-z0-9-]+$`)
	cweRE := regexp.MustCompile(`^CWE-[1-9][0-9]*$`)
	langs := map[string]bool{}
	seen := map[string]bool{}
	for _, r := range rules {
		if !idRE.MatchString(r.ID) || seen[r.ID] {
			t.Errorf("%s: id %q is not aster.<language>.<name> or is repeated", r.File, r.ID)
		}
		seen[r.ID] = true
		langs[r.Language] = true
		if !cweRE.MatchString(r.Metadata.CWE) {
			t.Errorf("%s: metadata.cwe %q", r.ID, r.Metadata.CWE)
		}
		if want := "https://cwe.mitre.org/data/definitions/" + strings.TrimPrefix(r.Metadata.CWE, "CWE-") + ".html"; r.URL != want {
			t.Errorf("%s: url %q, want %q", r.ID, r.URL, want)
		}
		if !slices.Contains([]string{"error", "warning", "info"}, r.Severity) {
			t.Errorf("%s: severity %q", r.ID, r.Severity)
		}
		if len(r.Message) < 40 || r.Metadata.Category != "security" {
			t.Errorf("%s: message too short or category not security", r.ID)
		}
		if want := "rules/" + strings.Replace(strings.TrimPrefix(r.ID, "aster."), ".", "-", 1) + ".yml"; r.File != want {
			t.Errorf("%s lives in %s, want %s", r.ID, r.File, want)
		}
	}
	for _, l := range []string{"python", "tsx", "go", "bash", "java", "kotlin", "php", "ruby", "csharp"} {
		if !langs[l] {
			t.Errorf("no rule for %s", l)
		}
	}
}

// TestDocumented: docs/review.md names every rule of the pack.
func TestDocumented(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "docs", "review.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if !bytes.Contains(b, []byte("`"+r.ID+"`")) {
			t.Errorf("docs/review.md does not list %s", r.ID)
		}
	}
}

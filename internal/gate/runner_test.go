package gate

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testkit"
	"github.com/asterhq/aster/internal/workspace"
)

// fakeSandbox answers per analyzer command, recording what it was asked.
type fakeSandbox struct {
	mu      sync.Mutex
	specs   map[string]sandbox.Spec
	stdin   map[string]string
	answer  func(spec sandbox.Spec) (sandbox.Result, error)
	running atomic.Int32
	peak    atomic.Int32
}

func (f *fakeSandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	var in []byte
	if spec.Stdin != nil {
		in, _ = io.ReadAll(spec.Stdin)
	}
	if spec.Workspace.Tar != nil {
		_, _ = io.Copy(io.Discard, spec.Workspace.Tar)
	}
	f.mu.Lock()
	f.specs[spec.Argv[0]] = spec
	f.stdin[spec.Argv[0]] = string(in)
	f.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	return f.answer(spec)
}

func newFake(answer func(sandbox.Spec) (sandbox.Result, error)) *fakeSandbox {
	return &fakeSandbox{specs: map[string]sandbox.Spec{}, stdin: map[string]string{}, answer: answer}
}

func testSnapshot(t *testing.T, files map[string]string) *Snapshot {
	t.Helper()
	s, err := SpoolSnapshot(bytes.NewReader(tarOf(t, files)), t.TempDir(), workspace.Caps{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ok(stdout string, code int) sandbox.Result {
	st := sandbox.StatusOK
	if code != 0 {
		st = sandbox.StatusExitNonzero
	}
	return sandbox.Result{ID: "r-1", Status: st, ExitCode: code, Stdout: sandbox.Output{Data: []byte(stdout)}}
}

const oneSARIF = `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t"}},"results":[{"ruleId":"R","message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"/work/a.sh"},"region":{"startLine":2}}}]}]}]}`

func TestRunnerStatuses(t *testing.T) {
	snap := testSnapshot(t, map[string]string{"a.sh": "#!/bin/sh\necho $1\n", "b.sh": "echo\n", "-rf.sh": "x\n", "c.py": "print(1)\n"})
	fake := newFake(func(spec sandbox.Spec) (sandbox.Result, error) {
		switch spec.Argv[0] {
		case "good":
			return ok(oneSARIF, 1), nil
		case "slow":
			return sandbox.Result{Status: sandbox.StatusTimeout, ExitCode: -1, Stderr: sandbox.Output{Data: []byte("still going")}}, nil
		case "absent":
			return ok("", 127), nil
		case "crash":
			return ok("", 2), nil
		case "garbage":
			return ok("Traceback (most recent call last):", 0), nil
		case "huge":
			r := ok(oneSARIF, 0)
			r.Stdout.Truncated = true
			return r, nil
		case "broken-engine":
			return sandbox.Result{Status: sandbox.StatusError, ExitCode: -1, Error: "engine down"}, sandbox.ErrUnavailable
		case "cat": // the image's VersionsFile
			if spec.Argv[1] != VersionsFile {
				t.Errorf("versions read from %q", spec.Argv)
			}
			return ok(`{"good": "1.2.3", "crash": "not a version!", "slow": 7}`, 0), nil
		}
		t.Errorf("unexpected command %q", spec.Argv)
		return sandbox.Result{}, nil
	})
	an := func(name string, mod func(*Analyzer)) Analyzer {
		a := Analyzer{Name: name, Command: []string{name, "{files}"}, Format: finding.FormatSARIF, Files: []string{"*.sh"}}
		if mod != nil {
			mod(&a)
		}
		return a
	}
	req := Request{Snapshot: snap, Analyzers: []Analyzer{
		an("good", func(a *Analyzer) { a.Severity = finding.Error }),
		an("slow", nil),
		an("absent", func(a *Analyzer) { a.Optional = true }),
		an("crash", nil),
		an("garbage", nil),
		an("huge", nil),
		an("broken-engine", nil),
		an("nothing", func(a *Analyzer) { a.Files = []string{"*.rb"} }),
		an("needs-rules", func(a *Analyzer) { a.Requires = []string{".semgrep/*.yml"} }),
		{Name: "Bad Name", Command: []string{"x"}, Format: finding.FormatSARIF},
	}}
	var events []string
	var mu sync.Mutex
	r := NewRunner(fake, RunnerOptions{Parallel: 3, Progress: func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Done {
			events = append(events, e.Analyzer+":"+string(e.Result.Status))
		}
	}})
	res := r.Run(t.Context(), req)
	got := map[string]Status{}
	for _, a := range res.Analyzers {
		got[a.Name] = a.Status
		if a.Status != StatusOK && a.Reason == "" {
			t.Errorf("%s: status %s without a reason", a.Name, a.Status)
		}
	}
	want := map[string]Status{
		"good": StatusOK, "slow": StatusTimeout, "absent": StatusSkipped, "crash": StatusFailed,
		"garbage": StatusFailed, "huge": StatusFailed, "broken-engine": StatusError,
		"nothing": StatusSkipped, "needs-rules": StatusSkipped, "Bad Name": StatusError,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
	versions := map[string]string{}
	for _, a := range res.Analyzers {
		if a.Version != "" {
			versions[a.Name] = a.Version
		}
	}
	if d := cmp.Diff(map[string]string{"good": "1.2.3"}, versions); d != "" {
		t.Errorf("versions (-want +got):\n%s", d)
	}
	if len(res.Findings) != 1 || res.Findings[0].Path != "a.sh" || res.Findings[0].Severity != finding.Error || res.Findings[0].Analyzer != "good" {
		t.Errorf("findings %+v", res.Findings)
	}
	if res.Complete() {
		t.Error("Complete() with failed analyzers")
	}
	if p := fake.peak.Load(); p > 3 {
		t.Errorf("%d analyzers ran at once, limit 3", p)
	}
	if len(events) != len(req.Analyzers) {
		t.Errorf("progress events %v", events)
	}
	// {files} expands to the matching files, option-like names made safe.
	if d := cmp.Diff([]string{"good", "./-rf.sh", "a.sh", "b.sh"}, fake.specs["good"].Argv); d != "" {
		t.Errorf("argv (-want +got):\n%s", d)
	}
	spec := fake.specs["good"]
	if spec.Env["HOME"] != "/tmp" || len(spec.Env) != 1 || spec.Limits.OutputBytes != analyzerOutputBytes || spec.Limits.TimeoutMS != DefaultAnalyzerTimeout.Milliseconds() {
		t.Errorf("spec env %v limits %+v", spec.Env, spec.Limits)
	}
	for _, a := range res.Analyzers {
		if a.Name == "slow" && a.Stderr != "still going" {
			t.Errorf("timeout keeps the stderr tail: %q", a.Stderr)
		}
	}
}

func TestRunnerChangedAndStdin(t *testing.T) {
	snap := testSnapshot(t, map[string]string{"a.py": "x\n", "b.py": "y\n", "c.txt": "z\n"})
	fake := newFake(func(spec sandbox.Spec) (sandbox.Result, error) {
		return ok(`{"results":[],"errors":[]}`, 0), nil
	})
	a := Analyzer{Name: "bandit", Command: []string{"xargs", "-0", "bandit"}, Input: InputFiles0, Format: finding.FormatBandit, Files: []string{"*.py"}}
	res := NewRunner(fake, RunnerOptions{}).Run(t.Context(), Request{Snapshot: snap, Analyzers: []Analyzer{a}, Changed: []string{"b.py", "c.txt", "gone.py"}})
	if res.Analyzers[0].Status != StatusOK || res.Analyzers[0].TargetFiles != 1 {
		t.Fatalf("%+v", res.Analyzers[0])
	}
	if got := fake.stdin["xargs"]; got != "b.py\x00" {
		t.Errorf("stdin = %q, want only the changed .py file", got)
	}
	res = NewRunner(fake, RunnerOptions{}).Run(t.Context(), Request{Snapshot: snap, Analyzers: []Analyzer{a}, Changed: []string{"c.txt"}})
	if res.Analyzers[0].Status != StatusSkipped {
		t.Errorf("no changed .py file: %+v", res.Analyzers[0])
	}
}

func TestRunnerArgvCap(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 4000; i++ {
		files[filepath.Join("d", strings.Repeat("f", 10)+string(rune('a'+i%26))+strconv.Itoa(i)+".sh")] = "x"
	}
	snap := testSnapshot(t, files)
	fake := newFake(func(spec sandbox.Spec) (sandbox.Result, error) { return ok(oneSARIF, 0), nil })
	a := Analyzer{Name: "many", Command: []string{"tool", "{files}"}, Format: finding.FormatSARIF}
	res := NewRunner(fake, RunnerOptions{}).Run(t.Context(), Request{Snapshot: snap, Analyzers: []Analyzer{a}})
	if st := res.Analyzers[0]; st.Status != StatusFailed || !strings.Contains(st.Reason, "input: files0") {
		t.Errorf("%+v", st)
	}
}

func TestBuiltinsValid(t *testing.T) {
	for _, a := range Builtins() {
		if err := a.Validate(); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
	}
}

func TestSpoolSnapshotRejectsHostileTar(t *testing.T) {
	var buf bytes.Buffer
	if _, err := workspace.PackFiles(map[string][]byte{"ok.txt": []byte("x")}, &buf, workspace.Caps{}); err != nil {
		t.Fatal(err)
	}
	if _, err := SpoolSnapshot(strings.NewReader("not a tar at all, just text that is long enough to fill a header block"+strings.Repeat(".", 600)), t.TempDir(), workspace.Caps{}); err == nil {
		t.Error("garbage accepted as a snapshot")
	}
	dir := t.TempDir()
	s, err := SpoolSnapshot(&buf, dir, workspace.Caps{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"ok.txt"}, s.Files()); d != "" {
		t.Error(d)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spool file left behind: %v", left)
	}
}

// With several bad environment variables the same one is named every time.
func TestValidateNamesBadEnvInOneOrder(t *testing.T) {
	a := Analyzer{Name: "x", Command: []string{"tool"}, Format: finding.FormatSARIF,
		Env: map[string]string{"OK": "1", "Z-Z": "x", "B B": "x", "NUL": "a\x00b", "9X": "x"}}
	got := testkit.Same(t, func() string { return fmt.Sprint(a.Validate()) })
	if want := `environment variable "9X" is not valid`; !strings.Contains(got, want) {
		t.Errorf("Validate: %s, want %s", got, want)
	}
}

// batchSandbox answers a Bandit-format run with one result per file it was
// given on stdin, and fails the run whose files include fail.
type batchSandbox struct {
	mu      sync.Mutex
	batches [][]string
	fail    string
}

func (b *batchSandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	if spec.Stdin == nil { // the image's versions: none
		return sandbox.Result{ID: "v", Status: sandbox.StatusExitNonzero, ExitCode: 1}, nil
	}
	in, _ := io.ReadAll(spec.Stdin)
	files := strings.Split(strings.TrimSuffix(string(in), "\x00"), "\x00")
	b.mu.Lock()
	b.batches = append(b.batches, files)
	b.mu.Unlock()
	var out strings.Builder
	out.WriteString(`{"errors":[],"results":[`)
	for i, f := range files {
		if f == b.fail {
			return sandbox.Result{ID: "x", Status: sandbox.StatusOutputLimit, ExitCode: -1}, nil
		}
		if i > 0 {
			out.WriteByte(',')
		}
		sev := "LOW"
		if strings.HasPrefix(f, "app/") {
			sev = "HIGH"
		}
		fmt.Fprintf(&out, `{"filename":%q,"line_number":1,"issue_severity":%q,"issue_confidence":"HIGH","issue_text":"t","test_id":"B1","test_name":"n"}`, f, sev)
	}
	out.WriteString(`]}`)
	return sandbox.Result{ID: "x", Status: sandbox.StatusOK, Stdout: sandbox.Output{Data: []byte(out.String())}}, nil
}

func TestRunnerBatches(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 7; i++ {
		files[fmt.Sprintf("t/test_%d.py", i)] = "assert 1\n"
	}
	files["app/a.py"] = "x = 1\n"
	snap := snapshotOf(t, files)
	a := Analyzer{Name: "b", Command: []string{"xargs", "-0", "bandit"}, Input: InputFiles0, Format: finding.FormatBandit, Files: []string{"*.py"}, BatchFiles: 3}
	sb := &batchSandbox{}
	res := NewRunner(sb, RunnerOptions{Image: "img"}).Run(context.Background(), Request{Snapshot: snap, Analyzers: []Analyzer{a}})
	st := res.Analyzers[0]
	if st.Status != StatusOK || st.Batches != 3 || st.TargetFiles != 8 || len(res.Findings) != 8 {
		t.Fatalf("%s %q: %d batches, %d files, %d findings; want ok, 3 batches, 8 files, 8 findings", st.Status, st.Reason, st.Batches, st.TargetFiles, len(res.Findings))
	}
	seen := map[string]bool{}
	for _, b := range sb.batches {
		if len(b) > 3 {
			t.Errorf("a batch of %d files: %v", len(b), b)
		}
		for _, f := range b {
			if seen[f] {
				t.Errorf("%s given twice", f)
			}
			seen[f] = true
		}
	}
	if len(seen) != 8 {
		t.Errorf("%d files given, want 8", len(seen))
	}
	// a batch over its cap fails the analyzer, naming the batch
	sb = &batchSandbox{fail: "t/test_4.py"}
	res = NewRunner(sb, RunnerOptions{Image: "img"}).Run(context.Background(), Request{Snapshot: snap, Analyzers: []Analyzer{a}})
	if st := res.Analyzers[0]; st.Status != StatusFailed || !strings.HasPrefix(st.Reason, "batch 2 of 3 (3 files): ") || len(res.Findings) != 0 {
		t.Errorf("%s %q, %d findings; want failed in batch 2 of 3, no findings", st.Status, st.Reason, len(res.Findings))
	}
	// one batch: no count
	a.BatchFiles = 8
	res = NewRunner(&batchSandbox{}, RunnerOptions{Image: "img"}).Run(context.Background(), Request{Snapshot: snap, Analyzers: []Analyzer{a}})
	if st := res.Analyzers[0]; st.Status != StatusOK || st.Batches != 0 || len(res.Findings) != 8 {
		t.Errorf("one batch: %s %q, batches %d, %d findings", st.Status, st.Reason, st.Batches, len(res.Findings))
	}
}

// A file whose every finding the policy would suppress is not given to an
// analyzer taking a file list: counted per class, never to gitleaks (cloud
// keys are reported everywhere), and given again when the policy reports it.
func TestRunnerSkipsWhatThePolicySuppresses(t *testing.T) {
	snap := snapshotOf(t, map[string]string{
		"app/a.py": "x = 1\n", "tests/test_a.py": "assert 1\n", "lib/b_test.py": "assert 1\n",
		"vendor/v.py": "y = 2\n", "docs/conf.py": "z = 3\n",
	})
	a := Analyzer{Name: "bandit", Command: []string{"xargs", "-0", "bandit"}, Input: InputFiles0, Format: finding.FormatBandit, Files: []string{"*.py"}}
	given := func(p *Policy, name string) ([]string, AnalyzerResult) {
		t.Helper()
		a := a
		a.Name = name
		sb := &batchSandbox{}
		res := NewRunner(sb, RunnerOptions{Image: "img"}).Run(context.Background(), Request{Snapshot: snap, Analyzers: []Analyzer{a}, Policy: p})
		var files []string
		for _, b := range sb.batches {
			files = append(files, b...)
		}
		slices.Sort(files)
		return files, res.Analyzers[0]
	}
	files, st := given(DefaultPolicy(), "bandit")
	// docs suppress asserts and secrets only: docs/conf.py is still read
	if want := []string{"app/a.py", "docs/conf.py"}; !slices.Equal(files, want) {
		t.Errorf("default policy: given %v, want %v", files, want)
	}
	if st.Status != StatusOK || st.TargetFiles != 2 ||
		st.SkippedFiles[policySkipReason(ClassTests)] != 2 || st.SkippedFiles[policySkipReason(ClassVendored)] != 1 ||
		!strings.Contains(st.Reason, "in tests, whose findings the path-class policy suppresses (2 files)") {
		t.Errorf("default policy: %s %q, %d targets, skipped %v", st.Status, st.Reason, st.TargetFiles, st.SkippedFiles)
	}
	if files, _ := given(DefaultPolicy(), "gitleaks"); len(files) != 5 {
		t.Errorf("gitleaks given %v, want every file", files)
	}
	if files, _ := given(nil, "bandit"); len(files) != 5 {
		t.Errorf("no policy: given %v, want every file", files)
	}
	// tests reported: given again; vendored code suppressing only this
	// analyzer's rules (a glob) still skipped, another analyzer's not
	p, err := NewPolicy(map[Class]ClassSettings{ClassTests: {Suppress: []string{}}, ClassVendored: {Suppress: []string{"ban*/*"}}})
	if err != nil {
		t.Fatal(err)
	}
	if files, _ := given(p, "bandit"); !slices.Equal(files, []string{"app/a.py", "docs/conf.py", "lib/b_test.py", "tests/test_a.py"}) {
		t.Errorf("tests reported: given %v", files)
	}
	if files, _ := given(p, "taint-python"); len(files) != 5 {
		t.Errorf("another analyzer: given %v, want every file", files)
	}
	// a selector of one rule does not cover the analyzer
	p, _ = NewPolicy(map[Class]ClassSettings{ClassTests: {Suppress: []string{"bandit/B101"}}})
	if files, _ := given(p, "bandit"); !slices.Contains(files, "tests/test_a.py") {
		t.Errorf("one rule suppressed: tests not given: %v", files)
	}
	// nothing left: skipped, saying why
	only := snapshotOf(t, map[string]string{"tests/test_a.py": "assert 1\n"})
	res := NewRunner(&batchSandbox{}, RunnerOptions{Image: "img"}).Run(context.Background(), Request{Snapshot: only, Analyzers: []Analyzer{a}, Policy: DefaultPolicy()})
	if st := res.Analyzers[0]; st.Status != StatusSkipped || !strings.Contains(st.Reason, "in tests, whose findings the path-class policy suppresses (1 file)") {
		t.Errorf("only tests: %s %q", st.Status, st.Reason)
	}
}

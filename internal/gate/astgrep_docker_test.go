package gate_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/workspace"
)

// A small repository with one bug per language family and one clean file.
var astGrepRepo = map[string]string{
	"app/dao.py": "def create(conn, name):\n" +
		"    q = (\"INSERT INTO students (name) \"\n" +
		"         \"VALUES ('%(name)s')\" % {'name': name})\n" +
		"    with conn.cursor() as cur:\n" +
		"        cur.execute(q)\n",
	"web/routes.js": "exports.update = (req, res) => {\n" +
		"    const preTax = eval(req.body.preTax);\n" +
		"    res.json({ preTax });\n" +
		"};\n",
	"ok.py": "print('hello')\n",
	// A repository's own ast-grep project file must not be read: this one
	// would point ast-grep at rules that do not exist and fail the scan.
	"sgconfig.yml": "ruleDirs: [does-not-exist]\n",
}

func astGrepSnapshot(t *testing.T, extra map[string][]byte) *gate.Snapshot {
	t.Helper()
	m := map[string][]byte{}
	for k, v := range astGrepRepo {
		m[k] = []byte(v)
	}
	for k, v := range extra {
		m[k] = v
	}
	var buf bytes.Buffer
	if _, err := workspace.PackFiles(m, &buf, workspace.Caps{MaxBytes: 256 << 20, MaxFiles: 100}); err != nil {
		t.Fatal(err)
	}
	s, err := gate.SpoolSnapshot(&buf, t.TempDir(), workspace.Caps{MaxBytes: 256 << 20, MaxFiles: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Remove() })
	return s
}

// checkAstGrepRun asserts the findings of the pack on astGrepRepo.
func checkAstGrepRun(t *testing.T, res gate.Result) {
	t.Helper()
	if len(res.Analyzers) != 1 || res.Analyzers[0].Status != gate.StatusOK {
		t.Fatalf("analyzer %+v", res.Analyzers)
	}
	type hit struct {
		path, rule, cwe string
		line            int
	}
	var got []hit
	for _, f := range res.Findings {
		if f.Analyzer != "ast-grep" || len(f.CWE) != 1 {
			t.Errorf("finding %+v", f)
			continue
		}
		got = append(got, hit{f.Path, f.RuleID, f.CWE[0], f.StartLine})
	}
	want := []hit{
		{"app/dao.py", "aster.python.sql-injection", "CWE-89", 2},
		{"web/routes.js", "aster.js.code-injection", "CWE-95", 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings %+v, want %+v", got, want)
	}
	var sarif bytes.Buffer
	if err := finding.WriteSARIF(&sarif, res.Findings, finding.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(sarif.Bytes(), []byte(`"external/cwe/cwe-89"`)) {
		t.Error("the SARIF rule has no CWE tag")
	}
}

// TestAstGrepInImage runs the built-in ast-grep analyzer in the real image.
// It is skipped only while the image lacks /usr/local/bin/ast-grep.
func TestAstGrepInImage(t *testing.T) {
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	ctx := context.Background()
	probe, err := mgr.Run(ctx, sandbox.Spec{Image: sandboxtest.Image(), Argv: []string{"test", "-x", "/usr/local/bin/ast-grep"}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := gate.Lookup(gate.Builtins(), "ast-grep")
	r := gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()})
	if probe.ExitCode != 0 {
		// The analyzer is optional: on this image it is skipped, and says why.
		res := r.Run(ctx, gate.Request{Snapshot: astGrepSnapshot(t, nil), Analyzers: []gate.Analyzer{a}})
		if st := res.Analyzers[0]; st.Status != gate.StatusSkipped || st.ExitCode != 127 || st.Reason != "ast-grep is not installed in image "+sandboxtest.Image() {
			t.Fatalf("without ast-grep: %+v", st)
		}
		t.Skipf("image %s has no /usr/local/bin/ast-grep yet", sandboxtest.Image())
	}
	checkAstGrepRun(t, r.Run(ctx, gate.Request{Snapshot: astGrepSnapshot(t, nil), Analyzers: []gate.Analyzer{a}}))
}

// TestAstGrepDeliveryInSandbox runs the same analyzer command, rule pack on
// stdin included, in the real image with the host's pinned ast-grep (the
// build scripts/fetch-test-deps.sh installs) put in the snapshot and on PATH:
// the delivery and the reader are tested end to end before the image ships
// the binary.
func TestAstGrepDeliveryInSandbox(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the pinned build is fetched for linux/amd64 here")
	}
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "third_party", "astgrep", "node_modules", "@ast-grep", "cli-linux-x64-gnu", "ast-grep")
	b, err := os.ReadFile(bin)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("ast-grep missing in CI (scripts/fetch-test-deps.sh): %v", err)
		}
		t.Skipf("ast-grep not installed (run scripts/fetch-test-deps.sh): %v", err)
	}
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	a, _ := gate.Lookup(gate.Builtins(), "ast-grep")
	// The snapshot does not keep the executable bit: copy the binary out first,
	// then run the built-in script unchanged.
	a.Command = slices.Clone(a.Command)
	a.Command[2] = "mkdir -p /tmp/host-bin && cp /work/.host-bin/ast-grep /tmp/host-bin/ && chmod +x /tmp/host-bin/ast-grep && " + a.Command[2]
	a.Env = map[string]string{"PATH": "/tmp/host-bin:/usr/local/bin:/usr/bin:/bin"}
	a.TargetsOnly = false // the binary travels in the workspace, beside the targets
	snap := astGrepSnapshot(t, map[string][]byte{".host-bin/ast-grep": b})
	res := gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()}).Run(context.Background(),
		gate.Request{Snapshot: snap, Analyzers: []gate.Analyzer{a}})
	checkAstGrepRun(t, res)
}

// TestAstGrepReadsItsTargetsOnly runs the built-in analyzer in the real image
// over a change: only the changed files in its languages are read (the same
// bug in an unchanged file is not reported), a minified bundle never (though
// named by the change), and the path-class policy's tests are not given to
// it; the run's file count says so.
func TestAstGrepReadsItsTargetsOnly(t *testing.T) {
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	a, _ := gate.Lookup(gate.Builtins(), "ast-grep")
	js := []byte("exports.update = (req, res) => {\n    const preTax = eval(req.body.preTax);\n    res.json({ preTax });\n};\n")
	snap := astGrepSnapshot(t, map[string][]byte{
		"web/other.js":          js, // unchanged
		"web/vendor.min.js":     js,
		"tests/test_dao.py":     []byte(astGrepRepo["app/dao.py"]),
		"app/more/deep_name.py": []byte(astGrepRepo["app/dao.py"]),
	})
	changed := []string{"app/dao.py", "web/routes.js", "web/vendor.min.js", "tests/test_dao.py", "app/more/deep_name.py", "ok.py", "sgconfig.yml"}
	res := gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()}).Run(context.Background(),
		gate.Request{Snapshot: snap, Analyzers: []gate.Analyzer{a}, Changed: changed, Policy: gate.DefaultPolicy()})
	st := res.Analyzers[0]
	if st.Status == gate.StatusSkipped && st.ExitCode == 127 {
		t.Skipf("image %s has no ast-grep", sandboxtest.Image())
	}
	if st.Status != gate.StatusOK || st.TargetFiles != 4 || st.SkippedFiles["in tests, whose findings the path-class policy suppresses"] != 1 {
		t.Fatalf("analyzer %+v: want ok over 4 files, 1 test skipped", st)
	}
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.Path)
	}
	slices.Sort(got)
	if want := []string{"app/dao.py", "app/more/deep_name.py", "web/routes.js"}; !slices.Equal(got, want) {
		t.Errorf("findings in %v, want %v", got, want)
	}
}

package testrun

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/workspace"
)

// Plan is how a project's tests are run in a sandbox and how their report is
// read back.
type Plan struct {
	// Framework is "go", "pytest", "npm" or "custom".
	Framework string
	// Argv is what the sandbox executes.
	Argv []string
	// Env holds variables the runner needs in a sandbox (writable caches under
	// /tmp, no network fetches); the caller's own variables win over these.
	Env map[string]string
	// Format is the report the run leaves on stdout.
	Format Format
	// ReportPath is where a JUnit runner writes its report in the sandbox; the
	// wrapper in Argv copies it to stdout after the run.
	ReportPath string
	// MinTmpBytes is the least /tmp the runner needs (0: no need): Go 1.20
	// and later build the standard library into GOCACHE, under /tmp.
	MinTmpBytes int64
}

// goMinTmpBytes is /tmp enough for Go's build cache of the standard library
// and a project's packages; tmpfs takes memory only as it fills, and the
// memory limit still bounds it.
const goMinTmpBytes = 1 << 30

// TmpBytes is the /tmp size a run of p gets: the requested size, raised to
// the runner's need but never past ceiling (0: no ceiling).
func (p Plan) TmpBytes(requested, ceiling int64) int64 {
	need := p.MinTmpBytes
	if ceiling > 0 {
		need = min(need, ceiling)
	}
	return max(requested, need)
}

// Command is the project's own test command, as a person would type it: Argv without the
// wrapper that copies a JUnit report to stdout. Reports show this, not Argv.
func (p Plan) Command() []string {
	if p.ReportPath != "" && len(p.Argv) > 5 && p.Argv[0] == "sh" && p.Argv[1] == "-c" && p.Argv[2] == junitWrapper {
		return slices.Clone(p.Argv[5:])
	}
	if len(p.Argv) > 5 && p.Argv[0] == "sh" && p.Argv[1] == "-c" && p.Argv[2] == goCacheSeed {
		return slices.Clone(p.Argv[5:])
	}
	return slices.Clone(p.Argv)
}

// GoCacheDir is the sandbox image's warm Go build cache of the standard
// library (images/sandbox/build.sh builds it with goEnv's settings). It is
// read-only in the image; Go needs a writable cache, so runs copy it first.
const GoCacheDir = "/opt/aster/go-cache"

// goCacheSeed copies the image's cache ($1) to $GOCACHE when the run has none
// yet, then runs the command: without it every `go test` compiles the
// standard library before the project (minutes on a busy CPU). An image
// without the cache only loses the head start.
const goCacheSeed = `if [ -d "$1" ] && [ ! -e "$GOCACHE" ]; then mkdir -p "${GOCACHE%/*}" && cp -R "$1" "$GOCACHE"; fi; shift; exec "$@"`

// seedGoCache wraps a Go command in goCacheSeed.
func seedGoCache(argv []string) []string {
	return append([]string{"sh", "-c", goCacheSeed, "go-cache", GoCacheDir}, argv...)
}

// ErrNotDetected says no known test runner matches a project.
var ErrNotDetected = errors.New("no test runner detected")

// DefaultReportPath is where detected JUnit runners write their report.
const DefaultReportPath = "/tmp/.aster-test-report.xml"

// junitWrapper runs a command with its stdout sent to stderr, then copies the
// JUnit report to stdout, so stdout carries only the report and the exit
// status is the command's. $1 is the report path; the command follows.
const junitWrapper = `report=$1; shift; "$@" 1>&2; rc=$?; cat -- "$report" 2>/dev/null; exit $rc`

// goEnv makes `go test` work in a sandbox: writable caches in /tmp, no module
// downloads (there is no network), no toolchain switching, no C compiler.
var goEnv = map[string]string{
	"GOCACHE":     "/tmp/.cache/go-build",
	"GOPATH":      "/tmp/go",
	"GOTOOLCHAIN": "local",
	"GOPROXY":     "off",
	"GOTELEMETRY": "off",
	"CGO_ENABLED": "0",
}

// pytestMarkers are files that say a directory is a pytest project.
var pytestMarkers = []string{"pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "conftest.py"}

// Detect picks the test command for a project from the names of its files,
// relative to the directory the tests run in. The first match wins, in this
// order: go.mod → `go test -json ./...`; pytest.ini, pyproject.toml, tox.ini,
// setup.cfg, conftest.py or test_*.py / *_test.py files → pytest with a JUnit
// report; package.json → `npm test` (no machine-readable report).
func Detect(names []string) (Plan, error) {
	top := map[string]bool{}
	pyTests := false
	for _, n := range names {
		n = strings.TrimPrefix(path.Clean(strings.TrimPrefix(n, "./")), "/")
		if !strings.Contains(n, "/") {
			top[n] = true
		}
		base := path.Base(n)
		if strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")) {
			pyTests = true
		}
	}
	switch {
	case top["go.mod"]:
		return GoPlan(), nil
	case slices.ContainsFunc(pytestMarkers, func(m string) bool { return top[m] }) || pyTests:
		return PytestPlan(), nil
	case top["package.json"]:
		return Plan{Framework: "npm", Argv: []string{"npm", "test"}, Env: map[string]string{"CI": "true"}, Format: FormatNone}, nil
	}
	return Plan{}, fmt.Errorf("%w: no go.mod, pytest configuration or test_*.py, or package.json in the test directory", ErrNotDetected)
}

// DetectIn is Detect for the tests of workdir (relative to /work, "" for
// /work itself), given the names of every entry of the workspace: those
// under workdir are made relative to it. An invalid workdir is an error
// that names it; a project Detect does not recognise is ErrNotDetected.
func DetectIn(names []string, workdir string) (Plan, error) {
	rel, err := NamesIn(names, workdir)
	if err != nil {
		return Plan{}, err
	}
	return Detect(rel)
}

// NamesIn returns the names of a workspace's entries that are under
// workdir (relative to /work, "" for /work itself), relative to it. An
// invalid workdir is an error that names it.
func NamesIn(names []string, workdir string) ([]string, error) {
	dir := ""
	if workdir != "" {
		d, err := workspace.CleanName(workdir)
		if err != nil {
			return nil, fmt.Errorf("workdir: %v", err)
		}
		dir = d
	}
	rel := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.TrimPrefix(path.Clean("/"+n), "/")
		if dir == "" {
			rel = append(rel, n)
		} else if r, ok := strings.CutPrefix(n, dir+"/"); ok {
			rel = append(rel, r)
		}
	}
	return rel, nil
}

// GoPlan runs every package's tests with `go test -json ./...`.
func GoPlan() Plan {
	return Plan{Framework: "go", Argv: seedGoCache([]string{"go", "test", "-json", "./..."}), Env: cloneEnv(goEnv), Format: FormatGoJSON, MinTmpBytes: goMinTmpBytes}
}

// PytestPlan runs pytest with a JUnit report (and without its cache, which
// would only write into the throwaway workspace).
func PytestPlan() Plan {
	p, _ := Custom([]string{"python3", "-m", "pytest", "-p", "no:cacheprovider", "--junitxml=" + DefaultReportPath}, FormatJUnit, DefaultReportPath)
	p.Framework = "pytest"
	p.Env = map[string]string{"PYTHONDONTWRITEBYTECODE": "1"}
	return p
}

// Custom is the plan for a caller's own command. With format "" it is
// FormatGoJSON when the command looks like `go test -json ...`, else
// FormatNone. FormatJUnit needs the path the command writes its report to:
// the command then runs with its stdout sent to stderr, and the report is
// copied to stdout afterwards.
func Custom(argv []string, format Format, reportPath string) (Plan, error) {
	if len(argv) == 0 || argv[0] == "" {
		return Plan{}, errors.New("empty test command")
	}
	p := Plan{Framework: "custom", Argv: slices.Clone(argv), Format: format}
	if format == "" {
		p.Format = FormatNone
		if looksLikeGoTestJSON(argv) {
			p.Format = FormatGoJSON
			p.Env = cloneEnv(goEnv)
			p.Argv = seedGoCache(p.Argv)
		}
	}
	switch p.Format {
	case FormatGoJSON, FormatNone:
		if reportPath != "" {
			return Plan{}, fmt.Errorf("a report path is only used with the %s format", FormatJUnit)
		}
	case FormatJUnit:
		if reportPath == "" {
			return Plan{}, fmt.Errorf("the %s format needs the path the command writes its report to", FormatJUnit)
		}
		if strings.IndexByte(reportPath, 0) >= 0 || len(reportPath) > 4096 {
			return Plan{}, errors.New("report path is not a valid path")
		}
		p.ReportPath = reportPath
		p.Argv = append([]string{"sh", "-c", junitWrapper, "aster-test", reportPath}, argv...)
	default:
		return Plan{}, fmt.Errorf("unknown report format %q (want %s, %s or %s)", format, FormatGoJSON, FormatJUnit, FormatNone)
	}
	return p, nil
}

func looksLikeGoTestJSON(argv []string) bool {
	if path.Base(argv[0]) != "go" || len(argv) < 2 || argv[1] != "test" {
		return false
	}
	return slices.ContainsFunc(argv[2:], func(a string) bool { return a == "-json" || a == "--json" || a == "-json=true" })
}

// MergeEnv returns the plan's variables overlaid with the caller's.
func (p Plan) MergeEnv(caller map[string]string) map[string]string {
	out := cloneEnv(p.Env)
	for k, v := range caller {
		out[k] = v
	}
	return out
}

func cloneEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

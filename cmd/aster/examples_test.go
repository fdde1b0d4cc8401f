package main_test

// aster:env-typos (misspelt ASTER_* names on purpose)

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testkit"
)

// runBinary runs the built aster with exactly env (plus PATH and HOME).
func runBinary(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runWith(t, append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...), nil, args...)
}

// runWith runs the built aster with the environment env and stdin (nil: none),
// and returns its exit code, stdout and stderr.
func runWith(t *testing.T, env []string, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), asterBin, args...)
	cmd.Env = env
	cmd.Stdin = stdin
	return testkit.Run(t, cmd)
}

// The real binary refuses a typo in aster.yaml or in an ASTER_* name, and a
// bad log level, with exit 2, the key, the file and line, and the nearest
// name, before it contacts any engine; the variables tests and scripts set
// are accepted.
func TestStrictConfiguration(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "aster.yaml")
	if err := os.WriteFile(cfg, []byte("runtime: docker\nlimts:\n  timeout: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--config", cfg, "exec", "--", "true"}, cfg + `:2: unknown key "limts" (did you mean "limits"?)`},
		{[]string{"ASTER_TIMOUT=5s"}, []string{"exec", "--", "true"}, "unknown environment variable ASTER_TIMOUT (did you mean ASTER_TIMEOUT?)"},
		{[]string{"ASTER_LOG_LEVEL=verbose"}, []string{"exec", "--", "true"}, `ASTER_LOG_LEVEL: log level "verbose": want debug, info, warn or error`},
		{nil, []string{"--log-level", "warnn", "sandbox", "reap", "--dry-run"}, `--log-level: log level "warnn": want debug, info, warn or error (did you mean "warn"?)`},
		// Accepted: the run gets as far as its own check of --workdir.
		{[]string{"ASTER_REQUIRE_DOCKER=1", "ASTER_REQUIRE_OCI=1", "ASTER_TEST_IMAGE=x", "ASTER_INIT_PATH=/nonexistent", "ASTER_LABELS=a=b", "ASTER_REAPER_ALLOWANCE=1s", "ASTER_K8S_STATE=/tmp/x"},
			[]string{"exec", "--workdir", "nothere", "--", "true"}, "--workdir nothere: /work is empty"},
	}
	for _, c := range cases {
		t.Run(strings.Join(append(c.env, c.args...), " "), func(t *testing.T) {
			code, stdout, stderr := runBinary(t, c.env, c.args...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d stdout %q stderr %q; want exit 2 and %q", code, stdout, stderr, c.want)
			}
		})
	}
}

// helpExamples returns the example lines of `aster ARGS --help` (Examples:,
// and the root's Start here:), continuation lines joined.
func helpExamples(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, stderr := runBinary(t, nil, append(args, "--help")...)
	if code != 0 {
		t.Fatalf("%v --help: exit %d %s", args, code, stderr)
	}
	var lines []string
	in, cur := false, ""
	for _, l := range strings.Split(out, "\n") {
		switch {
		case l == "Examples:" || l == "Start here:":
			in = true
		case in && strings.HasPrefix(l, "  "):
			l = strings.TrimSpace(l)
			if rest, ok := strings.CutSuffix(l, `\`); ok {
				cur += rest + " "
				continue
			}
			lines = append(lines, cur+l)
			cur = ""
		default:
			in = false
		}
	}
	return lines
}

// The `aster exec` and `aster sandbox reap --dry-run` examples of `aster
// --help`, `aster exec --help` and `aster sandbox reap --help` run verbatim, through a shell, in a directory with the files they name, and
// do what they say (the timeout example times out; the exit 3 one exits 3).
func TestHelpExamplesRunVerbatim(t *testing.T) {
	engine(t)
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "project"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "project", "test_example.py"), []byte("def test_ok():\n    assert 6 * 7 == 42\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "script.py"), []byte("import os\nprint('mode', os.environ['MODE'])\n"), 0o644))
	// `aster` in the examples is this build.
	path := filepath.Dir(asterBin) + ":" + os.Getenv("PATH")
	want := map[string]int{}
	lines := append(helpExamples(t), helpExamples(t, "exec")...)
	lines = append(lines, helpExamples(t, "sandbox", "reap")...)
	for _, l := range lines {
		// exec runs one sandbox; reap --dry-run only lists (reap without it
		// would remove other people's expired sandboxes from the shared engine).
		if !strings.Contains(l, "aster exec ") && !strings.HasSuffix(l, "aster sandbox reap --dry-run") {
			continue
		}
		code := 0
		switch {
		case strings.Contains(l, "sleep 10") && strings.Contains(l, "--timeout 5s"):
			code = 124
		case strings.Contains(l, "exit 3"):
			code = 3
		}
		want[l] = code
	}
	if len(want) < 7 {
		t.Fatalf("only %d exec examples: %v", len(want), want)
	}
	for line, code := range want {
		t.Run(line, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), "sh", "-c", line)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + path, "HOME=" + dir, "ASTER_INIT_PATH=" + sandboxtest.InitBinary(t), "ASTER_LABELS=aster.test=help-examples"}
			if img := os.Getenv("ASTER_TEST_IMAGE"); img != "" {
				cmd.Env = append(cmd.Env, "ASTER_IMAGES="+img)
			}
			got, out, errb := testkit.Run(t, cmd)
			if got != code {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr %q", got, code, out, errb)
			}
			if code == 0 && out == "" {
				t.Fatalf("no output; stderr %q", errb)
			}
		})
	}
}

// --workdir takes the documented default /work and paths under it; an
// image the engine lacks is a usage error that does not send the user to
// `make image` (which builds only the default image).
func TestExecWorkdirAndUnknownImage(t *testing.T) {
	engine(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pkg", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"exec", "--workdir", "/work", "--", "pwd"}, "/work\n"},
		{[]string{"exec", "--dir", dir, "--workdir", "/work/pkg/sub", "--", "pwd"}, "/work/pkg/sub\n"},
		{[]string{"exec", "--dir", dir, "--workdir", "pkg", "--", "pwd"}, "/work/pkg\n"},
	} {
		code, out, stderr := aster(t, "workdir", "", c.args...)
		if code != 0 || out != c.out {
			t.Errorf("%q: exit %d out %q err %q", c.args, code, out, stderr)
		}
	}
	code, out, stderr := aster(t, "image", "", "exec", "--image", "aster-test-absent-image:latest", "--", "true")
	if code != 2 || out != "" || !strings.Contains(stderr, "aster-test-absent-image:latest is not present") || strings.Contains(stderr, "build it with `make image`") {
		t.Fatalf("absent image: exit %d out %q err %q", code, out, stderr)
	}
}
